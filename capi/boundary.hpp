// The C ABI boundary: every exported function runs its body through `guarded`, so no exception
// crosses into C, and every failure becomes a status plus the thread's last-error message.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "abi_sizes.hpp"
#include "core/error.hpp"
#include "unmask.h"

namespace unmask::capi {

// Records "function: prefix detail" as the thread's last error. Never throws: if even that
// allocation fails, a fixed message stands in.
void record_error(const char* function, const char* prefix, const char* detail) noexcept;

template <typename Body>
unmask_status guarded(const char* function, Body&& body) noexcept {
    try {
        body();
        return UNMASK_OK;
    } catch (const Error& e) {
        record_error(function, "", e.what());
        return static_cast<unmask_status>(e.status());
    } catch (const std::bad_alloc&) {
        record_error(function, "", "out of host memory");
        return UNMASK_ERR_OUT_OF_BUDGET;
    } catch (const std::exception& e) {
        record_error(function, "internal error: ", e.what());
        return UNMASK_ERR_INTERNAL;
    } catch (...) {
        record_error(function, "internal error: ", "unknown exception");
        return UNMASK_ERR_INTERNAL;
    }
}

template <typename T>
void require_not_null(const T* pointer, const char* name) {
    if (pointer == nullptr) fail(Status::invalid_argument, "{} is NULL", name);
}

// Reads a caller's parameter struct of any published size: fields beyond the caller's
// struct_size keep their defaults, so programs built against an older header keep working.
// `oldest_size` is the size of the struct's first published version.
template <typename Params>
Params read_params(const Params* given, const char* name, const Params& defaults, size_t oldest_size) {
    Params params = defaults;
    if (given == nullptr) return params;
    const size_t size = given->struct_size;
    if (size < oldest_size || size > sizeof(Params)) {
        fail(Status::invalid_argument,
             "{}->struct_size is {}, expected between {} and {} (initialise it with the matching "
             "_params_init function)",
             name, size, oldest_size, sizeof(Params));
    }
    std::memcpy(&params, given, size);
    return params;
}

// The sized initialiser of a parameter struct: the first `size` bytes of `defaults`, with
// struct_size = size, written to *params; `size` from the first published size to the newest.
template <typename Params>
void write_defaults(Params* params, size_t size, Params defaults, size_t oldest_size) {
    require_not_null(params, "params");
    if (size < oldest_size || size > sizeof(Params))
        fail(Status::invalid_argument, "size is {}, expected between {} and {}", size, oldest_size, sizeof(Params));
    defaults.struct_size = static_cast<uint32_t>(size);
    std::memcpy(params, &defaults, size);
}


// Checks an output struct's struct_size the same way; returns how many bytes may be written.
template <typename Out>
size_t writable_size(const Out* out, const char* name, size_t oldest_size) {
    require_not_null(out, name);
    const size_t size = out->struct_size;
    if (size < oldest_size || size > sizeof(Out)) {
        fail(Status::invalid_argument, "{}->struct_size is {}, expected between {} and {}", name, size,
             oldest_size, sizeof(Out));
    }
    return size;
}

template <typename T>
T require_one_of(T value, std::initializer_list<T> allowed, const char* name) {
    for (T candidate : allowed)
        if (candidate == value) return value;
    fail(Status::invalid_argument, "{} has the unknown value {}", name, value);
}

// A caller's array: a negative length, or NULL with a positive length, is INVALID_ARGUMENT.
inline void require_array(const void* data, int64_t length, const char* data_name, const char* length_name) {
    if (length < 0) fail(Status::invalid_argument, "{} must not be negative, got {}", length_name, length);
    if (length > 0) require_not_null(data, data_name);
}

// Writes as much of [source, source + size) as fits into the caller's buffer and reports the
// full size, so the caller can size a second call.
template <typename T>
void write_sized(const T* source, size_t size, T* buffer, int64_t capacity, int64_t* size_out) {
    *size_out = static_cast<int64_t>(size);
    if (capacity > 0) std::memcpy(buffer, source, size_t(std::min<int64_t>(capacity, *size_out)) * sizeof(T));
}

// Text for the caller with its NUL: whole and NUL-terminated when *length (the text's length,
// without the NUL) is below `capacity`.
inline void write_text(const std::string& text, char* buffer, int64_t capacity, int64_t* length) {
    write_sized(text.c_str(), text.size() + 1, buffer, capacity, length);
    *length = static_cast<int64_t>(text.size());
}

}  // namespace unmask::capi
