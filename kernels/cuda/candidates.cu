#include "cuda/candidates.hpp"

#include "cuda/device_math.cuh"
#include "cuda/launch.cuh"

namespace unmask::kernels::cuda {
namespace {

// A block of 1,024 threads takes a row: with few rows (a dual-cache step's block) each block is
// alone on its SM and keeps more of its loads in flight; with many, two blocks share an SM. One
// count whatever the batch, so that a row's sums, and so its candidate, never depend on it.
constexpr int threads = 1024;

// The calling thread's block, for row_candidate.
struct ThreadBlock {
    __device__ int64_t thread() const { return threadIdx.x; }
    __device__ int64_t threads() const { return blockDim.x; }
    __device__ double sum(double v) const { return block_sum(v); }
    __device__ Best best(Best v) const { return block_best(v); }
};

__global__ void __launch_bounds__(threads)
    candidates_kernel(const float* logits, int64_t vocab, const CandidateRow* params, const int32_t* banned,
                      GumbelRange gumbel, Candidate* out) {
    const CandidateRow p = params[blockIdx.x];  // in registers, not read from memory at each use
    row_candidate(ThreadBlock{}, logits + blockIdx.x * vocab, vocab, p, banned, gumbel, out + blockIdx.x);
}

}  // namespace

cudaError_t candidates(const float* logits, int64_t rows, int64_t vocab, const CandidateRow* params,
                       const int32_t* banned, GumbelRange gumbel, Candidate* out, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if (rows > INT32_MAX || vocab <= 0) return cudaErrorInvalidValue;
    return launch_kernel(candidates_kernel, static_cast<unsigned>(rows), threads, 0, stream, logits, vocab, params,
                         banned, gumbel, out);
}

}  // namespace unmask::kernels::cuda
