// Collectives among the devices of one engine, for tensor and expert parallelism: every rank
// calls the same collectives in the same order with the same sizes (as NCCL requires), each on
// its own device's memory. Every rank gets the same bits of a reduction, whichever rank finishes
// first: the host communicator sums in rank order, NCCL (backend/cuda/nccl_communicator.hpp) in
// the order its algorithm fixes for the group.
//
// A rank that cannot go on calls abort(): every rank waiting in a collective, and every later
// call, then throws Error(DEVICE) naming it, instead of waiting forever for it. A collective that
// a rank does not join within the group's timeout is a DEVICE error naming the absent ranks (the
// host communicator; NCCL has no such timeout).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace unmask {

class Communicator {
public:
    virtual ~Communicator() = default;

    virtual int rank() const noexcept = 0;
    virtual int size() const noexcept = 0;

    // data[i] = the sum over the ranks of their data[i], in place.
    virtual void all_reduce_sum(float* data, size_t count) = 0;
    // out[r * count + i] = rank r's in[i], on every rank (out holds size() * count floats).
    virtual void all_gather(const float* in, size_t count, float* out) = 0;
    // out[i] = the sum over the ranks r of their in[rank() * count + i] (in holds size() * count).
    virtual void reduce_scatter_sum(const float* in, size_t count, float* out) = 0;
    // Rank r's segment for rank d (send_counts[d] floats, segments back to back in rank order)
    // lands in rank d's out as its segment from r (receive_counts[r] floats, back to back); each
    // rank's receive_counts[r] must equal rank r's send_counts[d]: variable sizes, as expert
    // parallelism's token dispatch needs.
    virtual void all_to_all(const float* in, const size_t* send_counts, float* out, const size_t* receive_counts) = 0;
    // data = rank root's data, on every rank.
    virtual void broadcast(float* data, size_t count, int root) = 0;
    virtual void barrier() = 0;

    // Ends the group's work: this rank and every other throw Error(DEVICE) from their collectives,
    // now and later, naming this rank and `reason`.
    virtual void abort(const std::string& reason) noexcept = 0;
};

// `ranks` host "devices" in one process, each communicator used by its own thread: for the tests of
// the parallel forward and for CPUs with several sockets. A collective waits at most `timeout` for
// every rank to join.
std::vector<std::unique_ptr<Communicator>> make_host_communicators(int ranks,
                                                                   std::chrono::milliseconds timeout = std::chrono::minutes(5));

}  // namespace unmask
