// Every internal enum the C ABI exposes holds the same value as its UNMASK_* constant, so that the
// boundary converts them with a cast (after checking a caller's value is one of them). This file
// is the one place that says so: a renumbered enumerator or constant fails to build here.
#include "core/error.hpp"
#include "core/logging.hpp"
#include "decode/decode_params.hpp"
#include "decode/generation_parameters.hpp"
#include "decode/sequence.hpp"
#include "engine/engine.hpp"
#include "engine/request.hpp"
#include "model/architecture.hpp"
#include "model/load_options.hpp"
#include "unmask.h"

namespace unmask {
namespace {

template <typename Enum>
constexpr bool same(Enum value, int constant) {
    return static_cast<int>(value) == constant;
}

static_assert(same(Status::ok, UNMASK_OK) && same(Status::invalid_argument, UNMASK_ERR_INVALID_ARGUMENT) &&
              same(Status::unsupported, UNMASK_ERR_UNSUPPORTED) && same(Status::model_format, UNMASK_ERR_MODEL_FORMAT) &&
              same(Status::io, UNMASK_ERR_IO) && same(Status::out_of_budget, UNMASK_ERR_OUT_OF_BUDGET) &&
              same(Status::queue_full, UNMASK_ERR_QUEUE_FULL) && same(Status::timeout, UNMASK_ERR_TIMEOUT) &&
              same(Status::cancelled, UNMASK_ERR_CANCELLED) && same(Status::too_long, UNMASK_ERR_TOO_LONG) &&
              same(Status::shutting_down, UNMASK_ERR_SHUTTING_DOWN) && same(Status::device, UNMASK_ERR_DEVICE) &&
              same(Status::internal, UNMASK_ERR_INTERNAL));
static_assert(same(LogLevel::debug, UNMASK_LOG_DEBUG) && same(LogLevel::info, UNMASK_LOG_INFO) &&
              same(LogLevel::warn, UNMASK_LOG_WARN) && same(LogLevel::error, UNMASK_LOG_ERROR));
static_assert(same(BackendKind::cpu, UNMASK_BACKEND_CPU) && same(BackendKind::cuda, UNMASK_BACKEND_CUDA));
static_assert(same(Precision::automatic, UNMASK_PRECISION_AUTO) && same(Precision::fp32, UNMASK_PRECISION_FP32) &&
              same(Precision::bf16, UNMASK_PRECISION_BF16) && same(Precision::fp16, UNMASK_PRECISION_FP16) &&
              same(Precision::int8, UNMASK_PRECISION_INT8) && same(Precision::q4, UNMASK_PRECISION_Q4) &&
              same(Precision::fp8, UNMASK_PRECISION_FP8));
static_assert(same(ChecksumMode::if_present, UNMASK_CHECKSUM_IF_PRESENT) &&
              same(ChecksumMode::require, UNMASK_CHECKSUM_REQUIRE) && same(ChecksumMode::skip, UNMASK_CHECKSUM_SKIP));
static_assert(same(Component::embedding, UNMASK_COMPONENT_EMBEDDING) &&
              same(Component::attention, UNMASK_COMPONENT_ATTENTION) && same(Component::norm, UNMASK_COMPONENT_NORM) &&
              same(Component::mlp, UNMASK_COMPONENT_MLP) && same(Component::router, UNMASK_COMPONENT_ROUTER) &&
              same(Component::experts, UNMASK_COMPONENT_EXPERTS) &&
              same(Component::shared_experts, UNMASK_COMPONENT_SHARED_EXPERTS) &&
              same(Component::lm_head, UNMASK_COMPONENT_LM_HEAD) &&
              static_cast<int>(Component::lm_head) + 1 == UNMASK_COMPONENT_COUNT);
static_assert(same(CommitPolicy::low_confidence, UNMASK_POLICY_LOW_CONFIDENCE) &&
              same(CommitPolicy::random, UNMASK_POLICY_RANDOM) && same(CommitPolicy::origin, UNMASK_POLICY_ORIGIN) &&
              same(CommitPolicy::maskgit_plus, UNMASK_POLICY_MASKGIT_PLUS) &&
              same(CommitPolicy::topk_margin, UNMASK_POLICY_TOPK_MARGIN) &&
              same(CommitPolicy::entropy, UNMASK_POLICY_ENTROPY) && same(CommitPolicy::rnd1, UNMASK_POLICY_RND1));
static_assert(same(EosConfidence::off, UNMASK_EOS_CONFIDENCE_OFF) &&
              same(EosConfidence::reference_quirk, UNMASK_EOS_CONFIDENCE_REFERENCE) &&
              same(EosConfidence::eos_and_eot, UNMASK_EOS_CONFIDENCE_BOTH));
static_assert(same(CacheMode::none, UNMASK_CACHE_NONE) && same(CacheMode::prefix, UNMASK_CACHE_PREFIX) &&
              same(CacheMode::dual, UNMASK_CACHE_DUAL));
static_assert(same(RequestFinish::length, UNMASK_FINISH_LENGTH) && same(RequestFinish::eos, UNMASK_FINISH_EOS) &&
              same(RequestFinish::cancelled, UNMASK_FINISH_CANCELLED) &&
              same(RequestFinish::timeout, UNMASK_FINISH_TIMEOUT) && same(RequestFinish::error, UNMASK_FINISH_ERROR));
static_assert(same(FinishReason::length, UNMASK_FINISH_LENGTH) && same(FinishReason::eos, UNMASK_FINISH_EOS) &&
              same(FinishReason::cancelled, UNMASK_FINISH_CANCELLED));
static_assert(same(Health::loading, UNMASK_HEALTH_LOADING) && same(Health::ready, UNMASK_HEALTH_READY) &&
              same(Health::draining, UNMASK_HEALTH_DRAINING) && same(Health::failed, UNMASK_HEALTH_FAILED) &&
              same(Health::stopped, UNMASK_HEALTH_STOPPED));
static_assert(same(Enumeration::policy, UNMASK_ENUM_POLICY) && same(Enumeration::cache_mode, UNMASK_ENUM_CACHE_MODE) &&
              same(Enumeration::precision, UNMASK_ENUM_PRECISION) &&
              same(Enumeration::finish_reason, UNMASK_ENUM_FINISH_REASON) &&
              same(Enumeration::eos_confidence, UNMASK_ENUM_EOS_CONFIDENCE) &&
              static_cast<int>(Enumeration::eos_confidence) + 1 == enumeration_count);
static_assert(same(ParameterType::integer, UNMASK_PARAM_INTEGER) && same(ParameterType::number, UNMASK_PARAM_NUMBER) &&
              same(ParameterType::flag, UNMASK_PARAM_FLAG) && same(ParameterType::choice, UNMASK_PARAM_CHOICE));

}  // namespace
}  // namespace unmask
