#include "cuda/candidates.hpp"

#include "cuda/device_math.cuh"
#include "cuda/launch.cuh"

namespace unmask::kernels::cuda {
namespace {

// Threads per block: a block takes a row. With many rows 256 (several blocks share each SM);
// with few, each row's block is alone on its SM and takes 1,024 threads, so that it keeps more of
// the SM's loads in flight.
constexpr int many_rows_threads = 256, few_rows_threads = 1024;
constexpr int64_t few_rows = 128;

// The calling thread's block, for row_candidate.
struct ThreadBlock {
    __device__ int64_t thread() const { return threadIdx.x; }
    __device__ int64_t threads() const { return blockDim.x; }
    __device__ double sum(double v) const { return block_sum(v); }
    __device__ Best best(Best v) const { return block_best(v); }
};

template <int Threads>
__global__ void __launch_bounds__(Threads)
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
    if (rows <= few_rows)
        return launch_kernel(candidates_kernel<few_rows_threads>, static_cast<unsigned>(rows), few_rows_threads, 0,
                             stream, logits, vocab, params, banned, gumbel, out);
    return launch_kernel(candidates_kernel<many_rows_threads>, static_cast<unsigned>(rows), many_rows_threads, 0,
                         stream, logits, vocab, params, banned, gumbel, out);
}

}  // namespace unmask::kernels::cuda
