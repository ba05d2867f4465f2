// The launches, barriers and warp collectives of cuda_on_host.hpp. A block's threads are fibers
// on the launching thread: each runs until it reaches a collective or returns, and a collective
// completes when every thread it waits for has arrived, which makes its waiters ready again (the
// last to arrive goes on first). When no thread is ready and some have not returned, the block is
// deadlocked. A fiber starts on its own stack through ucontext and switches with
// _setjmp/_longjmp, which save no signal mask (no system call per switch: a kernel's threads
// switch at every shuffle); AddressSanitizer is told of every change of stack.
#undef _FORTIFY_SOURCE  // its longjmp check refuses jumps between stacks
#include <setjmp.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "cuda_on_host.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace cuda_on_host {
namespace {

const char* name(Collective kind) {
    switch (kind) {
        case Collective::sync_threads: return "__syncthreads";
        case Collective::count_threads: return "__syncthreads_count";
        case Collective::sync_warp: return "__syncwarp";
        case Collective::shuffle: return "a shuffle";
        case Collective::ballot: return "__ballot_sync";
        case Collective::wmma_load: return "wmma::load_matrix_sync";
        case Collective::wmma_mma: return "wmma::mma_sync";
        case Collective::wmma_store: return "wmma::store_matrix_sync";
    }
    return "?";
}

// " (block x,y,z)", for a failure's message.
std::string in_block(uint3 index) {
    return " (block " + std::to_string(index.x) + "," + std::to_string(index.y) + "," + std::to_string(index.z) + ")";
}

// Unwinds a thread's kernel once its block has failed.
struct Abandon {};

// Threads meeting at one collective. What they bring is kept by the parity of the barrier's
// generation: a waiter reads it after the barrier completes, and the same parity is written again
// only two generations later, after every waiter has arrived at the one between.
struct Barrier {
    std::vector<int> waiters;  // fibers
    int arrived = 0;
    uint64_t generation = 0;
    Collective kind = Collective::sync_threads;
    uint64_t values[2][32] = {};  // by lane (warps)
    uint64_t total[2] = {};       // the count (blocks) or the ballot (warps)
};

constexpr size_t stack_bytes = 256 * 1024;

// Goes on at `to`. Under AddressSanitizer, through glibc's own _longjmp: ASan's wrapper of it
// unpoisons the stack it leaves with a system call per switch (50 times the switch itself), which
// the fiber annotations below make unneeded.
void jump(jmp_buf& to) {
#if defined(__SANITIZE_ADDRESS__)
    using LongJump = void (*)(jmp_buf, int);
    static const auto glibc =
        reinterpret_cast<LongJump>(dlsym(dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), "_longjmp"));
    glibc(to, 1);
#else
    _longjmp(to, 1);
#endif
}

// The threads of a launch, running its blocks in turn.
class Team {
public:
    Team(dim3 grid, dim3 block, size_t shared_bytes, void (*thread)(const void*), const void* context)
        : grid_(grid),
          block_(block),
          threads_(int(block.x * block.y * block.z)),
          warps_((threads_ + 31) / 32),
          shared_size_(shared_bytes),
          thread_(thread),
          context_(context),
          fibers_(size_t(threads_)),
          warp_barriers_(size_t(warps_)) {
        // Exactly the bytes asked for, so AddressSanitizer sees a kernel overrun them.
        shared_.reset(static_cast<unsigned char*>(::operator new(shared_bytes, std::align_val_t{128})));
        static thread_local std::vector<std::unique_ptr<char[]>> stacks;  // kept for the next launches
        while (stacks.size() < fibers_.size()) stacks.emplace_back(new char[stack_bytes]);
        for (size_t i = 0; i < fibers_.size(); ++i) fibers_[i].stack = stacks[i].get();
    }

    // Runs every block; false once one has failed.
    bool run() {
        for (unsigned z = 0; z < grid_.z; ++z)
            for (unsigned y = 0; y < grid_.y; ++y)
                for (unsigned x = 0; x < grid_.x; ++x)
                    if (!run_block({x, y, z})) return false;
        return true;
    }

    void* shared() const { return shared_.get(); }
    const std::string& failure() const { return failure_; }
    int running_thread() const { return running_; }

    int block_collective(Collective kind, bool predicate) {
        Barrier& b = block_barrier_;
        const int parity = arrive(b, kind);
        b.total[parity] += predicate;
        wait(b, live_);
        return kind == Collective::count_threads ? int(b.total[parity]) : 0;
    }

    uint64_t warp_collective(Collective kind, uint64_t value, int source) {
        const int warp = running_ / 32, lane = running_ % 32, lanes = warp_lanes(warp);
        if (warp_live_[size_t(warp)] != lanes)
            fail(std::string(name(kind)) + " of every lane in warp " + std::to_string(warp) +
                 " after some of its lanes returned");
        Barrier& b = warp_barriers_[size_t(warp)];
        const int parity = arrive(b, kind);
        b.values[parity][lane] = value;
        if (value != 0) b.total[parity] |= uint64_t(1) << lane;
        wait(b, lanes);
        if (kind == Collective::ballot) return b.total[parity];
        if (source < 0) return value;  // __shfl_up_sync's lanes below the offset keep their own
        if (source >= lanes) fail("a shuffle from lane " + std::to_string(source) + " of a warp of " +
                                  std::to_string(lanes) + " lanes");
        return b.values[parity][source];
    }

    [[noreturn]] void fail(const std::string& what) {
        if (failure_.empty()) failure_ = what + in_block(blockIdx);
        throw Abandon{};
    }

private:
    struct Fiber {
        ucontext_t start{};  // its entry, until it first runs
        jmp_buf resume_at{};
        char* stack = nullptr;  // stack_bytes
        enum { fresh, ready, waiting, done } state = fresh;
    };

    // The thread at place i of the block's running order, and the place of thread t.
    int thread_at(int i) const { return from_last_ ? 32 * warps_ - 1 - i : i; }
    int place_of(int t) const { return thread_at(t); }

    int warp_lanes(int warp) const { return warp + 1 < warps_ ? 32 : threads_ - 32 * (warps_ - 1); }

    bool run_block(uint3 index) {
        live_ = threads_;
        warp_live_.assign(size_t(warps_), 32);
        warp_live_.back() = warp_lanes(warps_ - 1);
        std::memset(shared_.get(), 0xFF, shared_size_);  // NaN as floats: what a kernel reads unwritten shows
        for (int t = 0; t < threads_; ++t) {
            Fiber& f = fibers_[size_t(t)];
            getcontext(&f.start);
            f.start.uc_stack = {f.stack, 0, stack_bytes};
            f.start.uc_link = nullptr;  // fiber_main never returns: it jumps back
            makecontext(&f.start, fiber_main, 0);
            f.state = Fiber::fresh;
        }
        blockIdx = index;
        // Warps in turn, the first as far as it goes: of the ready threads, the first lane of the
        // first warp runs next; odd blocks take the threads from the last. A missing barrier then
        // lets a warp (or lane) read what the others have not written yet (0xFF bytes, or stale
        // values), one way in even blocks and the other in odd ones.
        from_last_ = (index.x + index.y + index.z) % 2 == 1;
        first_ready_ = 0;
        for (;;) {
            int next = -1;
            for (int i = first_ready_; i < 32 * warps_ && next < 0; ++i) {
                const int t = thread_at(i);
                if (t >= threads_) continue;  // past a partial last warp
                const auto state = fibers_[size_t(t)].state;
                if (state == Fiber::ready || state == Fiber::fresh) next = t;
                first_ready_ = i;  // none before it is ready, until a collective completes
            }
            if (next >= 0) {
                resume(next);
                continue;
            }
            if (live_ == 0) break;
            // Every thread left waits at a collective that cannot complete.
            if (failure_.empty())
                failure_ = "a deadlock: every thread waits at a barrier the others never reach" + in_block(index);
            for (Fiber& f : fibers_)
                if (f.state == Fiber::waiting) f.state = Fiber::ready;  // each abandons its kernel
            first_ready_ = 0;
        }
        block_barrier_ = Barrier{};
        for (Barrier& b : warp_barriers_) b = Barrier{};
        return failure_.empty();
    }

    static void fiber_main();

    // Runs fiber t until it waits or returns (AddressSanitizer told of each change of stack).
    void resume(int t) {
        running_ = t;
        const unsigned u = unsigned(t);
        threadIdx = {u % block_.x, u / block_.x % block_.y, u / (block_.x * block_.y)};
        blockDim = block_;
        gridDim = grid_;
        Fiber& f = fibers_[size_t(t)];
#if defined(__SANITIZE_ADDRESS__)
        void* fake = nullptr;
        __sanitizer_start_switch_fiber(&fake, f.stack, stack_bytes);
#endif
        if (_setjmp(scheduler_) == 0) {
            if (f.state == Fiber::fresh) {
                f.state = Fiber::ready;
                setcontext(&f.start);
            }
            jump(f.resume_at);
        }
#if defined(__SANITIZE_ADDRESS__)
        __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    }

    // The running fiber waits: back to the launching thread's loop until resumed.
    void yield() {
        Fiber& self = fibers_[size_t(running_)];
        self.state = Fiber::waiting;
#if defined(__SANITIZE_ADDRESS__)
        void* fake = nullptr;
        __sanitizer_start_switch_fiber(&fake, scheduler_stack_, scheduler_size_);
#endif
        if (_setjmp(self.resume_at) == 0) jump(scheduler_);
#if defined(__SANITIZE_ADDRESS__)
        __sanitizer_finish_switch_fiber(fake, &scheduler_stack_, &scheduler_size_);
#endif
    }

    // The running thread arrives at `b`; returns the parity its values go to.
    int arrive(Barrier& b, Collective kind) {
        if (!failure_.empty()) throw Abandon{};
        const int parity = int(b.generation & 1);
        if (b.arrived == 0) {
            b.kind = kind;
            b.total[parity] = 0;
        } else if (b.kind != kind) {
            fail(std::string("threads at ") + name(b.kind) + " and at " + name(kind) + " together");
        }
        ++b.arrived;
        return parity;
    }

    // Completes `b` if `expected` threads are there, else waits until it completes.
    void wait(Barrier& b, int expected) {
        if (b.arrived == expected) return complete(b);
        b.waiters.push_back(running_);
        yield();
        if (!failure_.empty()) throw Abandon{};
    }

    void complete(Barrier& b) {
        for (int t : b.waiters) {
            fibers_[size_t(t)].state = Fiber::ready;
            first_ready_ = std::min(first_ready_, place_of(t));
        }
        b.waiters.clear();
        b.arrived = 0;
        ++b.generation;
    }

    // The running thread's kernel has returned (or was abandoned).
    void leave() {
        --live_;
        const int warp = running_ / 32;
        --warp_live_[size_t(warp)];
        fibers_[size_t(running_)].state = Fiber::done;
        if (!failure_.empty()) return;
        if (warp_barriers_[size_t(warp)].arrived > 0) {
            failure_ = "lane " + std::to_string(running_ % 32) + " of warp " + std::to_string(warp) +
                       " returned while its warp waits at " + name(warp_barriers_[size_t(warp)].kind) +
                       in_block(blockIdx);
            return;
        }
        if (block_barrier_.arrived > 0 && block_barrier_.arrived == live_) complete(block_barrier_);
    }

    struct Free {
        void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t{128}); }
    };

    const dim3 grid_, block_;
    const int threads_, warps_;
    const size_t shared_size_;
    void (*const thread_)(const void*);
    const void* const context_;
    std::unique_ptr<unsigned char, Free> shared_;
    std::vector<Fiber> fibers_;
    jmp_buf scheduler_{};  // the launching thread's loop
    const void* scheduler_stack_ = nullptr;  // the launching thread's stack (AddressSanitizer)
    size_t scheduler_size_ = 0;
    Barrier block_barrier_;
    std::vector<Barrier> warp_barriers_;
    std::vector<int> warp_live_;
    int live_ = 0, running_ = 0;
    bool from_last_ = false;  // this block runs its warps from the last
    int first_ready_ = 0;     // no thread before this place of the running order is ready
    std::string failure_;
};

thread_local Team* current_team = nullptr;
thread_local std::string last_failure;

void Team::fiber_main() {
    Team& team = *current_team;
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(nullptr, &team.scheduler_stack_, &team.scheduler_size_);
#endif
    try {
        team.thread_(team.context_);
    } catch (const Abandon&) {
    } catch (...) {
        if (team.failure_.empty()) team.failure_ = "an exception escaped the kernel";
    }
    team.leave();
    // Back to the launching thread for good (null: this fiber's stack is done with).
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_start_switch_fiber(nullptr, team.scheduler_stack_, team.scheduler_size_);
#endif
    jump(team.scheduler_);
}

Team& team() {
    if (current_team == nullptr) {
        std::fputs("cuda_on_host: a device function called outside a kernel\n", stderr);
        std::abort();
    }
    return *current_team;
}

std::mutex limits_mutex;
std::map<void (*)(), size_t> limits;

}  // namespace

void fault(const std::string& what) { team().fail(what); }
const std::string& last_fault() { return last_failure; }

int block_collective(Collective kind, bool predicate) { return team().block_collective(kind, predicate); }
uint64_t warp_collective(Collective kind, uint64_t value, int source) {
    return team().warp_collective(kind, value, source);
}
int lane() { return team().running_thread() % 32; }
void* dynamic_shared_bytes() { return team().shared(); }

void set_shared_limit(void (*kernel)(), int bytes) {
    std::lock_guard lock(limits_mutex);
    limits[kernel] = size_t(bytes);
}
size_t shared_limit(void (*kernel)()) {
    std::lock_guard lock(limits_mutex);
    const auto it = limits.find(kernel);
    return it == limits.end() ? 48 * 1024 : it->second;
}

cudaError_t run_threads(void (*kernel)(), dim3 grid, dim3 block, size_t shared_bytes, void (*thread)(const void*),
                        const void* context) {
    last_failure.clear();
    const uint64_t threads = uint64_t(block.x) * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.x > 0x7FFFFFFFu || grid.y > 65535 || grid.z > 65535)
        return cudaErrorInvalidConfiguration;
    if (shared_bytes > shared_limit(kernel)) return cudaErrorInvalidValue;
    if (current_team != nullptr) {  // its stacks are in use
        std::fputs("cuda_on_host: a launch from inside a kernel\n", stderr);
        std::abort();
    }
    Team team(grid, block, shared_bytes, thread, context);
    current_team = &team;
    const bool ran = team.run();
    current_team = nullptr;
    if (ran) return cudaSuccess;
    last_failure = team.failure();
    return cudaErrorLaunchFailure;
}

}  // namespace cuda_on_host
