// Stands in for the CUDA toolkit's <mma.h> on host threads (cuda_on_host.hpp): WMMA fragments of
// 16 x 16 x 16 with fp32 accumulation. Loads, products and stores are warp collectives, as their
// .sync instructions are. Every lane holds whole input fragments, and of an accumulator the share
// of elements it stores (element e: lane e % 32); a product leaves the other elements NaN. So a
// kernel may not depend on which lane holds which element, and reading what another lane stored
// needs __syncwarp, as on a GPU. Pointers must be on 32 bytes and strides
// multiples of 16 bytes, as the hardware requires.
#pragma once

#include <type_traits>

#include "cuda_on_host.hpp"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

// Held row by row: M x K (a), K x N (b), M x N (accumulator).
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
    static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
    static constexpr int columns = std::is_same_v<Use, matrix_a> ? K : N;
    static constexpr int num_elements = rows * columns;
    T x[num_elements];
};

namespace detail {

inline float to_float(float f) { return f; }
inline float to_float(__nv_bfloat16 h) { return __bfloat162float(h); }
inline float to_float(__half h) { return __half2float(h); }

template <typename T>
void check_operand(const T* pointer, unsigned stride) {
    if (reinterpret_cast<uintptr_t>(pointer) % 32 != 0)
        cuda_on_host::fault("a WMMA load or store at an address off 32 bytes");
    if (stride * sizeof(T) % 16 != 0) cuda_on_host::fault("a WMMA stride that is not a multiple of 16 bytes");
}

// Element (r, c) of a matrix at `p` with leading dimension `stride`.
template <typename T>
T& at(T* p, unsigned stride, bool row_major_layout, int r, int c) {
    return row_major_layout ? p[size_t(r) * stride + c] : p[size_t(c) * stride + r];
}

template <typename Fragment, typename T>
void load(Fragment& f, const T* p, unsigned stride, bool row_major_layout) {
    check_operand(p, stride);
    cuda_on_host::warp_collective(cuda_on_host::Collective::wmma_load, 0, 0);
    for (int r = 0; r < Fragment::rows; ++r)
        for (int c = 0; c < Fragment::columns; ++c)
            f.x[r * Fragment::columns + c] = at(p, stride, row_major_layout, r, c);
}

}  // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned stride) {
    static_assert(!std::is_same_v<Use, accumulator>, "an accumulator's load names its layout");
    detail::load(f, p, stride, std::is_same_v<Layout, row_major>);
}

template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float>& f, const float* p, unsigned stride, layout_t layout) {
    detail::load(f, p, stride, layout == mem_row_major);
}

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, T value) {
    for (T& e : f.x) e = value;
}

// d = a · b + c in fp32 (products of 16-bit inputs are exact in fp32), for the lane's share of
// d's elements; the others become NaN, so that nothing may rely on them.
template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LayoutA>& a,
              const fragment<matrix_b, M, N, K, T, LayoutB>& b, const fragment<accumulator, M, N, K, float>& c) {
    cuda_on_host::warp_collective(cuda_on_host::Collective::wmma_mma, 0, 0);
    const int lane = cuda_on_host::lane();
    for (int e = 0; e < M * N; ++e) {
        if (e % 32 != lane) {
            d.x[e] = NAN;
            continue;
        }
        const int i = e / N, j = e % N;
        float sum = c.x[e];
        for (int k = 0; k < K; ++k) sum += detail::to_float(a.x[i * K + k]) * detail::to_float(b.x[k * N + j]);
        d.x[e] = sum;
    }
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned stride, layout_t layout) {
    detail::check_operand(p, stride);
    cuda_on_host::warp_collective(cuda_on_host::Collective::wmma_store, 0, 0);
    for (int e = cuda_on_host::lane(); e < M * N; e += 32) {  // this lane's share
        const int r = e / N, c = e % N;
        detail::at(p, stride, layout == mem_row_major, r, c) = f.x[e];
    }
}

}  // namespace nvcuda::wmma
