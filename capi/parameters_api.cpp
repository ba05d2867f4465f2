// unmask_generate_param_*, unmask_generate_params_set/_get, unmask_enum_*: the library's table of
// generation parameters (decode/generation_parameters.hpp) over the fields of the C struct.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "boundary.hpp"
#include "decode/generation_parameters.hpp"
#include "generate_params.hpp"

using namespace unmask;
using namespace unmask::capi;

namespace {

// Where a parameter lives in unmask_generate_params. The table's names are the fields' names.
struct Field {
    std::string_view name;
    size_t offset;
    enum class Kind { i32, i64, u64, f64 } kind;
    size_t since = 0;  // the least struct_size that has the field; 0: the bytes that hold it
};

#define UNMASK_FIELD(field, kind) Field{#field, offsetof(unmask_generate_params, field), Field::Kind::kind}
// ABI 1.2's cache_mode sits in 1.1's tail padding: a 1.1 struct covers its bytes, not the field.
#define UNMASK_FIELD_1_2(field, kind) \
    Field{#field, offsetof(unmask_generate_params, field), Field::Kind::kind, generate_params_v1_2_size}
constexpr std::array fields = {
    UNMASK_FIELD(policy, i32),         UNMASK_FIELD(gen_length, i64),          UNMASK_FIELD(steps, i64),
    UNMASK_FIELD(block_length, i64),   UNMASK_FIELD(min_steps, i64),           UNMASK_FIELD(max_steps, i64),
    UNMASK_FIELD(temperature, f64),    UNMASK_FIELD(top_k, i64),               UNMASK_FIELD(top_p, f64),
    UNMASK_FIELD(cfg_scale, f64),      UNMASK_FIELD(threshold, f64),           UNMASK_FIELD(factor, f64),
    UNMASK_FIELD(alg_temp, f64),       UNMASK_FIELD(eps, f64),                 UNMASK_FIELD(seed, u64),
    UNMASK_FIELD(logits_eos_inf, i32), UNMASK_FIELD(eos_confidence, i32),      UNMASK_FIELD(early_stop, i32),
    UNMASK_FIELD(threads, i32),        UNMASK_FIELD(eos_token_id, i64),        UNMASK_FIELD(eot_token_id, i64),
    UNMASK_FIELD(timeout_seconds, f64), UNMASK_FIELD(stream_steps, i32),       UNMASK_FIELD_1_2(cache_mode, i32),
    UNMASK_FIELD(cache_refresh_steps, i64), UNMASK_FIELD(cache_vicinity, i64), UNMASK_FIELD(cache_precision, i32),
    UNMASK_FIELD(edit_threshold, f64), UNMASK_FIELD(max_post_edit_steps, i64),
};
#undef UNMASK_FIELD
#undef UNMASK_FIELD_1_2

constexpr size_t field_bytes(Field::Kind kind) noexcept { return kind == Field::Kind::i32 ? 4 : 8; }

const Field& field_of(const GenerationParameter& parameter) {
    for (const Field& f : fields)
        if (f.name == parameter.name) return f;
    fail(Status::internal, "generation parameter '{}' has no field in unmask_generate_params", parameter.name);
}

// The field within the caller's struct_size, or INVALID_ARGUMENT: a struct of an older header.
const Field& field_within(const GenerationParameter& parameter, uint32_t struct_size) {
    const Field& f = field_of(parameter);
    if (std::max(f.offset + field_bytes(f.kind), f.since) > struct_size)
        fail(Status::invalid_argument, "params->struct_size {} predates the field {} (initialise it with "
             "unmask_generate_params_init)", struct_size, parameter.name);
    return f;
}

ParameterValue read_field(const unmask_generate_params& params, const Field& f) {
    const char* at = reinterpret_cast<const char*>(&params) + f.offset;
    ParameterValue value;
    switch (f.kind) {
        case Field::Kind::i32: { int32_t v; std::memcpy(&v, at, 4); value.integer = v; break; }
        case Field::Kind::i64: std::memcpy(&value.integer, at, 8); break;
        case Field::Kind::u64: std::memcpy(&value.integer, at, 8); break;  // the bits (ParameterValue)
        case Field::Kind::f64: std::memcpy(&value.number, at, 8); break;
    }
    return value;
}

void write_field(unmask_generate_params& params, const Field& f, const ParameterValue& value) {
    char* at = reinterpret_cast<char*>(&params) + f.offset;
    switch (f.kind) {
        case Field::Kind::i32: { const auto v = static_cast<int32_t>(value.integer); std::memcpy(at, &v, 4); break; }
        case Field::Kind::i64: std::memcpy(at, &value.integer, 8); break;
        case Field::Kind::u64: std::memcpy(at, &value.integer, 8); break;
        case Field::Kind::f64: std::memcpy(at, &value.number, 8); break;
    }
}

ParameterValue default_of(const GenerationParameter& p) {
    if (p.type == ParameterType::number) return {0, p.default_value};
    return {static_cast<int64_t>(p.default_value), 0};
}

// What unmask_parameter_info hands out: strings of static storage, made once.
struct ParameterText {
    std::string name, doc, default_value, choices;
};
const std::vector<ParameterText>& parameter_texts() {
    static const std::vector<ParameterText> texts = [] {
        std::vector<ParameterText> out;
        for (const GenerationParameter& p : generation_parameters()) {
            std::string choices;
            for (const NamedValue& v : p.choices) choices += (choices.empty() ? "" : ",") + std::string(v.name);
            out.push_back({std::string(p.name), std::string(p.doc), format_parameter(p, default_of(p)), choices});
        }
        return out;
    }();
    return texts;
}

Enumeration enumeration_of(int32_t enumeration) {
    if (enumeration < 0 || enumeration >= enumeration_count)
        fail(Status::invalid_argument, "enumeration {} is not one of UNMASK_ENUM_*", enumeration);
    return static_cast<Enumeration>(enumeration);
}

}  // namespace

namespace unmask::capi {

unmask_generate_params default_generate_params() {
    // Made once: every generation and submission reads its parameters over these.
    static const unmask_generate_params defaults = [] {
        unmask_generate_params p{};
        p.struct_size = sizeof p;
        for (const GenerationParameter& parameter : generation_parameters())
            write_field(p, field_of(parameter), default_of(parameter));
        return p;
    }();
    return defaults;
}

}  // namespace unmask::capi

extern "C" int64_t unmask_generate_param_count(void) { return static_cast<int64_t>(generation_parameters().size()); }

extern "C" unmask_status unmask_generate_param_info(int64_t index, unmask_parameter_info* info) {
    return guarded(__func__, [&] {
        const size_t size = writable_size(info, "info", parameter_info_v1_size);
        const auto all = generation_parameters();
        if (index < 0 || index >= static_cast<int64_t>(all.size()))
            fail(Status::invalid_argument, "index {} is outside the {} parameters", index, all.size());
        const GenerationParameter& p = all[size_t(index)];
        const ParameterText& text = parameter_texts()[size_t(index)];
        unmask_parameter_info out{};
        out.struct_size = static_cast<uint32_t>(size);
        out.type = static_cast<int32_t>(p.type);
        out.name = text.name.c_str();
        out.doc = text.doc.c_str();
        out.default_value = text.default_value.c_str();
        out.choices = text.choices.c_str();
        out.minimum = p.minimum;
        out.maximum = p.maximum;
        out.minimum_exclusive = p.minimum_exclusive ? 1 : 0;
        out.maximum_exclusive = p.maximum_exclusive ? 1 : 0;
        std::memcpy(info, &out, size);
    });
}

extern "C" unmask_status unmask_generate_params_set(unmask_generate_params* params, const char* name,
                                                    const char* value) {
    return guarded(__func__, [&] {
        require_not_null(params, "params");
        require_not_null(name, "name");
        require_not_null(value, "value");
        const GenerationParameter& parameter = generation_parameter(name);
        const Field& field = field_within(parameter, params->struct_size);
        write_field(*params, field, parse_parameter(parameter, value));
    });
}

extern "C" unmask_status unmask_generate_params_get(const unmask_generate_params* params, const char* name,
                                                    char* value, int64_t capacity, int64_t* length) {
    return guarded(__func__, [&] {
        require_not_null(params, "params");
        require_not_null(name, "name");
        require_not_null(length, "length");
        require_array(value, capacity, "value", "capacity");
        const GenerationParameter& parameter = generation_parameter(name);
        const Field& field = field_within(parameter, params->struct_size);
        write_text(format_parameter(parameter, read_field(*params, field)), value, capacity, length);
    });
}

extern "C" const char* unmask_enum_name(int32_t enumeration, int32_t value) {
    if (enumeration < 0 || enumeration >= enumeration_count) return nullptr;
    const auto name = enumeration_name(static_cast<Enumeration>(enumeration), value);
    return name ? name->data() : nullptr;  // the table's literals: NUL-terminated, static
}

extern "C" unmask_status unmask_enum_value(int32_t enumeration, const char* name, int32_t* value) {
    return guarded(__func__, [&] {
        const Enumeration e = enumeration_of(enumeration);
        require_not_null(name, "name");
        require_not_null(value, "value");
        if (const auto found = enumeration_value(e, name)) {
            *value = *found;
            return;
        }
        fail(Status::invalid_argument, "'{}' is not one of {}", name, value_names(enumeration_values(e)));
    });
}
