// Collectives among the CUDA devices of this process over NCCL (builds with UNMASK_WITH_NCCL):
// one communicator per device (ncclCommInitAll), each used by its own host thread and issuing its
// collectives on the stream it was made with, on that device's memory. A call returns once the
// collective is enqueued: its result is in place when the stream reaches it, as with any kernel,
// and a fault surfaces where the stream is next waited for.
//
// Every rank gets the same bits; NCCL sums in an order its algorithm (ring or tree) fixes for the
// group, not in rank order, so the bits may differ from the host communicator's. abort(), from
// the rank's own thread, marks the group aborted and aborts that rank's communicator
// (ncclCommAbort); every other rank's next call aborts its own and throws DEVICE naming the first
// failure (NCCL allows no second thread on a communicator). A rank already waiting on its stream
// for a collective the failed rank never joins is not released: that needs a watchdog polling
// ncclCommGetAsyncError, which is not built, as NCCL has no timeout of its own here.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "backend/communicator.hpp"

namespace unmask {

// The offsets of segments of `counts` elements laid back to back (an exclusive prefix sum): where
// all_to_all's segment for (or from) each rank starts.
std::vector<size_t> segment_offsets(std::span<const size_t> counts);

// Communicators for `devices` (distinct CUDA device indexes, rank r on devices[r]), rank r
// issuing on streams[r] (a cudaStream_t of that device; null: its default stream). Throws
// INVALID_ARGUMENT for an empty or repeated device list or a stream count that differs,
// UNSUPPORTED in a build without NCCL, DEVICE naming the device for one that does not exist or an
// NCCL failure.
std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(std::span<const int> devices,
                                                                   std::span<void* const> streams);

}  // namespace unmask
