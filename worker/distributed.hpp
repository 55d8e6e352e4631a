#pragma once
// The libtorch half of the worker SDK: a c10d ProcessGroupGloo over the launcher's store,
// gradient averaging in buckets (what DistributedDataParallel does after backward), parameter
// broadcast from rank 0, and @record-style error reporting for main().
//
// This header stays light on purpose (libtorch headers cost ~20 s per translation unit): it
// forward-declares the torch types it mentions. Include <torch/torch.h> in the program that uses
// it; the SDK's single heavy translation unit is distributed.cpp.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "worker/context.hpp"

namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}

namespace ddp::worker {

struct GroupOptions {
  // Connecting to the store, each store call and each collective.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // The address gloo listens on for its peers. Empty: 127.0.0.1 when MASTER_ADDR is a loopback
  // address (one node), else this host's name (as torch's default device does).
  std::string bind_host;
  // Gradient bucket size; DDP's default bucket_cap_mb is 25.
  std::size_t bucket_bytes = std::size_t{25} << 20;
};

// One gloo process group for the whole job. With a world of one rank and no store it is a no-op
// group: every collective returns at once, so a trainer runs unchanged without a launcher.
class ProcessGroup {
 public:
  // Connects a c10d TCPStore client to MASTER_ADDR:MASTER_PORT (the supervisor's store), scopes
  // its keys under /worker/attempt_<TORCHELASTIC_RESTART_COUNT> as torch 1.13's env:// does, and
  // builds a ProcessGroupGloo over it (rendezvous of all ranks happens here).
  explicit ProcessGroup(const WorkerContext& ctx, GroupOptions options = {});
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const GroupOptions& options() const { return options_; }

  // In place, bucketed (tensors of one dtype are flattened into buckets of bucket_bytes and one
  // collective runs per bucket; all buckets are in flight together).
  void allreduce_mean(const std::vector<at::Tensor>& tensors);
  void broadcast(const std::vector<at::Tensor>& tensors, int root = 0);
  // Mean of one number over the ranks (e.g. the loss, for logging).
  double allreduce_mean(double value);
  void barrier();

 private:
  enum class Op { kSumThenMean, kBroadcast };
  void bucketed(const std::vector<at::Tensor>& tensors, Op op, int root);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  GroupOptions options_;
  int rank_ = 0;
  int world_size_ = 1;
};

// After backward(): every rank's gradients become their mean over the ranks. A parameter
// without a gradient on this rank counts as a zero gradient, so all ranks build the same buckets.
// Buckets follow the reverse parameter order, as DDP's reducer does.
void average_gradients(ProcessGroup& group, torch::nn::Module& module);

// Before training: every rank takes rank `root`'s parameters and buffers (DDP does this in its
// constructor), so all replicas start equal whatever their seeds.
void broadcast_parameters(ProcessGroup& group, torch::nn::Module& module, int root = 0);

// Buffers only (BatchNorm running statistics), as DDP's broadcast_buffers does before forward.
void broadcast_buffers(ProcessGroup& group, torch::nn::Module& module, int root = 0);

// FNV-1a over the bytes of every parameter: equal on every rank when the replicas agree.
std::uint64_t parameter_hash(torch::nn::Module& module);

// Runs `main` like a function decorated with torchrun's @record: an uncaught exception is
// logged to stderr and written to TORCHELASTIC_ERROR_FILE (when set), and the process ends at
// once with _Exit(1) (2 for ddp::UsageError). A ProcessGroup unwound by that exception keeps its
// connections open until then, so the peers fail after this rank has exited and the supervisor
// names this rank as the root cause. Returns main's own exit code otherwise. It also installs the
// SIGABRT backtrace (stack_dump.hpp) for the supervisor's hang forensics.
int run_main(const std::function<int()>& main);

}  // namespace ddp::worker
