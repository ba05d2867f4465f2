// Stands in for the CUDA toolkit's <mma.h> on host threads (cuda_on_host.hpp): WMMA fragments of
// 16 x 16 x 16 with fp32 accumulation. Loads, products and stores are warp collectives, as their
// .sync instructions are. Every lane holds whole input fragments, and of an accumulator its own
// share, as on a GPU: lane l holds elements l, l + 32, ... of the tile in row order (a GPU's
// mapping differs: kernels may not depend on it), loads, computes and stores only those, so
// reading what another lane stored needs __syncwarp. Pointers must be on 32 bytes and strides
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

// Inputs held whole, row by row: M x K (a), K x N (b). An accumulator (M x N) holds the lane's
// share: x[i] is element lane + 32 i of the tile in row order.
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
    static constexpr bool shared_by_lanes = std::is_same_v<Use, accumulator>;
    static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
    static constexpr int columns = std::is_same_v<Use, matrix_a> ? K : N;
    static constexpr int num_elements = shared_by_lanes ? rows * columns / 32 : rows * columns;
    static_assert(!shared_by_lanes || rows * columns % 32 == 0);
    T x[num_elements];
};

namespace detail {

inline float to_float(float f) { return f; }
inline float to_float(__nv_bfloat16 h) { return __bfloat162float(h); }
inline float to_float(__half h) { return __half2float(h); }

// The collective of a load or store at `pointer` with `stride`, which the hardware takes from the
// whole warp: on 32 bytes, a multiple of 16 bytes, the same in every lane.
template <typename T>
void operand_collective(cuda_on_host::Collective kind, const T* pointer, unsigned stride) {
    if (reinterpret_cast<uintptr_t>(pointer) % 32 != 0)
        cuda_on_host::fault("a WMMA load or store at an address off 32 bytes");
    if (stride * sizeof(T) % 16 != 0) cuda_on_host::fault("a WMMA stride that is not a multiple of 16 bytes");
    const uint64_t operand = uint64_t(reinterpret_cast<uintptr_t>(pointer)) ^ (uint64_t(stride) << 48);
    if (cuda_on_host::warp_collective(kind, operand, 0) != operand)
        cuda_on_host::fault("lanes of a warp giving one WMMA load or store different pointers or strides");
}

// Element (r, c) of a matrix at `p` with leading dimension `stride`.
template <typename T>
T& at(T* p, unsigned stride, bool row_major_layout, int r, int c) {
    return row_major_layout ? p[size_t(r) * stride + c] : p[size_t(c) * stride + r];
}

// The tile element (in row order) that x[i] of the calling lane's fragment holds.
template <typename Fragment>
int element(int i) {
    return Fragment::shared_by_lanes ? cuda_on_host::lane() + 32 * i : i;
}

template <typename Fragment, typename T>
void load(Fragment& f, const T* p, unsigned stride, bool row_major_layout) {
    operand_collective(cuda_on_host::Collective::wmma_load, p, stride);
    for (int i = 0; i < Fragment::num_elements; ++i) {
        const int e = element<Fragment>(i);
        f.x[i] = at(p, stride, row_major_layout, e / Fragment::columns, e % Fragment::columns);
    }
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

// d = a · b + c in fp32 (products of 16-bit inputs are exact in fp32), for the lane's share of d.
template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LayoutA>& a,
              const fragment<matrix_b, M, N, K, T, LayoutB>& b, const fragment<accumulator, M, N, K, float>& c) {
    using Accumulator = fragment<accumulator, M, N, K, float>;
    cuda_on_host::warp_collective(cuda_on_host::Collective::wmma_mma, 0, 0);
    for (int i = 0; i < Accumulator::num_elements; ++i) {
        const int e = detail::element<Accumulator>(i), row = e / N, column = e % N;
        float sum = c.x[i];
        for (int k = 0; k < K; ++k)
            sum += detail::to_float(a.x[row * K + k]) * detail::to_float(b.x[k * N + column]);
        d.x[i] = sum;
    }
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned stride, layout_t layout) {
    using Accumulator = fragment<accumulator, M, N, K, float>;
    detail::operand_collective(cuda_on_host::Collective::wmma_store, p, stride);
    for (int i = 0; i < Accumulator::num_elements; ++i) {
        const int e = detail::element<Accumulator>(i);
        detail::at(p, stride, layout == mem_row_major, e / N, e % N) = f.x[i];
    }
}

}  // namespace nvcuda::wmma
