// The SDK's only libtorch translation unit (see distributed.hpp).
//
// Store choice: libtorch's own c10d::TCPStore client, pointed at the supervisor's store. Our
// store speaks the TCPStore wire protocol and is tested against exactly this client (torch 1.13's
// Python workers use the same C++ class), so there is nothing to adapt; a c10d::Store adapter
// over store::StoreClient would re-implement 1.13's Store interface (compareSet, getNumKeys,
// two waits, its timeout semantics) for no gain.
#include "worker/distributed.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cstdio>
#include <ctime>
#include <exception>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <typeinfo>

#include "common/error.hpp"
#include "worker/error_file.hpp"
#include "worker/stack_dump.hpp"

namespace ddp::worker {

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
};

namespace {

bool is_loopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

void wait_work(const c10::intrusive_ptr<c10d::Work>& work, std::chrono::milliseconds timeout, const char* what) {
  if (!work->wait(timeout)) {
    throw Error(fmt::format("{} did not complete within {} ms (a peer rank is gone or stuck)", what, timeout.count()));
  }
}

}  // namespace

ProcessGroup::ProcessGroup(const WorkerContext& ctx, GroupOptions options)
    : options_(std::move(options)), rank_(ctx.rank), world_size_(ctx.world_size) {
  if (ctx.master_port == 0) {
    require_store(ctx);
    return;  // a lone process: collectives are no-ops
  }
  impl_ = std::make_unique<Impl>();
  c10d::TCPStoreOptions so;
  so.port = ctx.master_port;
  so.isServer = false;
  // As torch's Python TCPStore(world_size=...) does: the client adds 1 to the store's `init/` key
  // on connect, which is how the supervisor sees every rank arrive (rendezvous_complete event,
  // the rendezvous watchdog). Only a server would wait on that count.
  so.numWorkers = static_cast<std::size_t>(ctx.world_size);
  so.waitWorkers = true;
  so.timeout = options_.timeout;
  auto tcp = c10::make_intrusive<c10d::TCPStore>(ctx.master_addr, so);
  impl_->store = c10::make_intrusive<c10d::PrefixStore>(fmt::format("/worker/attempt_{}", ctx.restart_count), tcp);

  auto go = c10d::ProcessGroupGloo::Options::create(options_.timeout);
  std::string host = options_.bind_host;
  if (host.empty() && is_loopback(ctx.master_addr)) host = "127.0.0.1";
  go->devices.push_back(host.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                     : c10d::ProcessGroupGloo::createDeviceForHostname(host));
  go->threads = 2;
  impl_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, ctx.rank, ctx.world_size, go);
}

ProcessGroup::~ProcessGroup() {
  // Unwinding from an exception that run_main will record: keep the gloo connections open until
  // the process exits. Closing them here would let the peers fail on "Connection closed by peer"
  // and exit before this rank has written its error file, and the supervisor would name a peer
  // as the root cause. run_main ends the process with _Exit, so nothing runs after this leak.
  if (std::uncaught_exceptions() > 0 && impl_) (void)impl_.release();
}

void ProcessGroup::bucketed(const std::vector<at::Tensor>& tensors, Op op, int root) {
  if (!impl_ || world_size_ == 1 || tensors.empty()) return;
  struct Bucket {
    std::vector<at::Tensor> members;
    at::Tensor flat;
    c10::intrusive_ptr<c10d::Work> work;
  };
  std::vector<Bucket> buckets;
  std::size_t bytes = 0;
  for (const auto& t : tensors) {
    auto size = static_cast<std::size_t>(t.numel()) * t.element_size();
    if (buckets.empty() || buckets.back().members.front().scalar_type() != t.scalar_type() ||
        bytes + size > options_.bucket_bytes) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().members.push_back(t);
    bytes += size;
  }
  // Launch every bucket's collective first: gloo works through them while later ones are packed.
  for (auto& b : buckets) {
    std::vector<at::Tensor> views;
    views.reserve(b.members.size());
    for (const auto& m : b.members) views.push_back(m.detach().reshape({-1}));
    b.flat = torch::cat(views);
    std::vector<at::Tensor> io{b.flat};
    if (op == Op::kBroadcast) {
      c10d::BroadcastOptions bo;
      bo.rootRank = root;
      b.work = impl_->pg->broadcast(io, bo);
    } else {
      b.work = impl_->pg->allreduce(io);
    }
  }
  for (auto& b : buckets) {
    wait_work(b.work, options_.timeout, op == Op::kBroadcast ? "broadcast" : "allreduce");
    if (op == Op::kSumThenMean) b.flat.div_(world_size_);
    std::int64_t offset = 0;
    torch::NoGradGuard no_grad;
    for (auto& m : b.members) {
      auto n = m.numel();
      m.copy_(b.flat.narrow(0, offset, n).view_as(m));
      offset += n;
    }
  }
}

void ProcessGroup::allreduce_mean(const std::vector<at::Tensor>& tensors) { bucketed(tensors, Op::kSumThenMean, 0); }

void ProcessGroup::broadcast(const std::vector<at::Tensor>& tensors, int root) {
  if (root < 0 || root >= world_size_) {
    throw Error(fmt::format("broadcast root {} is outside 0..{}", root, world_size_ - 1));
  }
  bucketed(tensors, Op::kBroadcast, root);
}

double ProcessGroup::allreduce_mean(double value) {
  if (!impl_ || world_size_ == 1) return value;
  auto t = torch::tensor({value}, torch::kFloat64);
  std::vector<at::Tensor> io{t};
  wait_work(impl_->pg->allreduce(io), options_.timeout, "allreduce");
  return t.item<double>() / world_size_;
}

void ProcessGroup::barrier() {
  if (!impl_ || world_size_ == 1) return;
  wait_work(impl_->pg->barrier(), options_.timeout, "barrier");
}

void average_gradients(ProcessGroup& group, torch::nn::Module& module) {
  if (group.world_size() == 1) return;
  auto params = module.parameters();
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    auto& p = *it;
    if (!p.requires_grad()) continue;
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.mutable_grad());
  }
  group.allreduce_mean(grads);
}

void broadcast_parameters(ProcessGroup& group, torch::nn::Module& module, int root) {
  auto tensors = module.parameters();
  for (auto& b : module.buffers()) tensors.push_back(b);
  group.broadcast(tensors, root);
}

void broadcast_buffers(ProcessGroup& group, torch::nn::Module& module, int root) {
  auto buffers = module.buffers();
  if (!buffers.empty()) group.broadcast(buffers, root);
}

std::uint64_t parameter_hash(torch::nn::Module& module) {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto& p : module.parameters()) {
    auto c = p.detach().contiguous().cpu();
    const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    auto n = static_cast<std::size_t>(c.numel()) * c.element_size();
    for (std::size_t i = 0; i < n; ++i) {
      h ^= bytes[i];
      h *= 1099511628211ull;
    }
  }
  return h;
}

namespace {

[[noreturn]] void report(const std::string& type, const std::string& what, std::optional<std::string> trace, int code) {
  ErrorRecord rec;
  rec.message = fmt::format("{}: {}", type, what);
  rec.callstack = std::move(trace);
  rec.timestamp = static_cast<std::int64_t>(std::time(nullptr));
  std::fprintf(stderr, "error: %s\n", rec.message.c_str());
  if (auto path = error_file_from_env(); !path.empty()) {
    if (!write_error_file(path, rec)) std::fprintf(stderr, "error: could not write the error file %s\n", path.c_str());
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // No static destructors: a process group left open on purpose (see ~ProcessGroup) still has
  // threads, and the error is already recorded.
  std::_Exit(code);
}

}  // namespace

int run_main(const std::function<int()>& main) {
  install_abort_backtrace();  // the hang forensics' fallback where gdb cannot read this process
  try {
    return main();
  } catch (const c10::Error& e) {
    std::optional<std::string> trace;
    if (!e.backtrace().empty()) trace = e.backtrace();
    report(demangle(typeid(e).name()), e.what_without_backtrace(), trace, 1);
  } catch (const UsageError& e) {
    report(demangle(typeid(e).name()), e.what(), std::nullopt, 2);
  } catch (const std::exception& e) {
    report(demangle(typeid(e).name()), e.what(), std::nullopt, 1);
  } catch (...) {
    report("unknown exception", "(not derived from std::exception)", std::nullopt, 1);
  }
}

}  // namespace ddp::worker
