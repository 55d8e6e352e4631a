// resnet-trainer: data-parallel training of a small ResNet-style CNN with the worker SDK, on a
// synthetic ImageNet-like dataset that is generated deterministically on the fly.
//
//   ddp-launch run --nproc-per-node 2 --no-python build/bin/resnet-trainer --steps 60
//
// - Data: `--classes` classes of 3×S×S images. Each class has a fixed smooth prototype image;
//   sample i is its class's prototype plus Gaussian noise, both drawn from seeds, so every rank
//   can make any sample from its index alone and the loss really falls.
// - Sharding as torch's DistributedSampler (drop_last): one shuffled order per epoch, the same on
//   every rank; rank r takes every world_size-th index. The global batch at a step is therefore
//   the same set of samples whatever the world size.
// - Batch policy from the launcher (DDP_PER_RANK_BATCH / DDP_GLOBAL_BATCH, else --batch-size per
//   rank); learning rate --lr × DDP_LR_SCALE with DDP_LR_WARMUP_STEPS of warm-up.
// - Rank 0 checkpoints every --checkpoint-every steps into --checkpoint-dir (tmp + rename); when
//   TORCHELASTIC_RESTART_COUNT > 0 every rank resumes from it and the step count continues.
// - Metrics: `@ddp-metric step=… loss=… samples_per_s=… lr=…` every --log-every steps per rank;
//   at the end `final step=… loss=… param_hash=…` (equal hashes: the replicas agree).
// - --fail-at-step K: rank --fail-rank fails once, on attempt 0, after step K (--fail-mode kill:
//   SIGKILL itself, exit: exit code 17, throw: an uncaught exception → the error file).
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "common/log.hpp"
#include "worker/context.hpp"
#include "worker/distributed.hpp"
#include "worker/log.hpp"
#include "worker/metrics.hpp"

namespace fs = std::filesystem;
namespace dw = ddp::worker;

namespace {

struct Args {
  std::int64_t steps = 60;
  std::int64_t batch_size = 32;  // per rank, when the launcher sets no batch policy
  double lr = 0.05;
  std::int64_t classes = 64;
  std::int64_t image_size = 32;
  std::int64_t width = 16;
  std::int64_t dataset_size = 8192;
  std::uint64_t seed = 1234;
  double noise = 1.0;
  std::int64_t log_every = 5;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 20;
  std::int64_t fail_at_step = -1;
  int fail_rank = -1;  // default: the last rank
  std::string fail_mode = "kill";
  int threads = 0;
  std::string log_level;
};

// --- model: stem, three residual stages (w, 2w, 4w channels), global pool, linear ---

struct BasicBlockImpl : torch::nn::Module {
  BasicBlockImpl(std::int64_t in, std::int64_t out, std::int64_t stride)
      : conv1(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)),
        bn1(out),
        conv2(torch::nn::Conv2dOptions(out, out, 3).padding(1).bias(false)),
        bn2(out) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    if (stride != 1 || in != out) {
      shortcut =
          torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                                torch::nn::BatchNorm2d(out));
      register_module("shortcut", shortcut);
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    return torch::relu(y + (shortcut.is_empty() ? x : shortcut->forward(x)));
  }
  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(BasicBlock);

struct SmallResNetImpl : torch::nn::Module {
  SmallResNetImpl(std::int64_t width, std::int64_t classes)
      : stem(torch::nn::Conv2dOptions(3, width, 3).padding(1).bias(false)),
        stem_bn(width),
        layer1(width, width, 1),
        layer2(width, 2 * width, 2),
        layer3(2 * width, 4 * width, 2),
        fc(4 * width, classes) {
    register_module("stem", stem);
    register_module("stem_bn", stem_bn);
    register_module("layer1", layer1);
    register_module("layer2", layer2);
    register_module("layer3", layer3);
    register_module("fc", fc);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(stem_bn(stem(x)));
    y = layer3(layer2(layer1(y)));
    y = torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1);
    return fc(y);
  }
  torch::nn::Conv2d stem;
  torch::nn::BatchNorm2d stem_bn;
  BasicBlock layer1, layer2, layer3;
  torch::nn::Linear fc;
};
TORCH_MODULE(SmallResNet);

// --- data ---

at::Generator seeded(std::uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

class SyntheticImages {
 public:
  SyntheticImages(const Args& a) : a_(a) {
    // Smooth prototypes: 4×4 random patterns upsampled, one per class.
    auto gen = seeded(a.seed);
    auto coarse = torch::randn({a.classes, 3, 4, 4}, gen);
    prototypes_ =
        torch::nn::functional::interpolate(coarse, torch::nn::functional::InterpolateFuncOptions()
                                                       .size(std::vector<std::int64_t>{a.image_size, a.image_size})
                                                       .mode(torch::kBilinear)
                                                       .align_corners(false));
  }
  std::int64_t size() const { return a_.dataset_size; }
  std::int64_t label(std::int64_t index) const {
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(index) * 2654435761u + a_.seed) %
                                     static_cast<std::uint64_t>(a_.classes));
  }
  std::pair<torch::Tensor, torch::Tensor> batch(const std::vector<std::int64_t>& indices) const {
    std::vector<torch::Tensor> images;
    std::vector<std::int64_t> labels;
    for (auto i : indices) {
      auto gen = seeded(a_.seed * 1000003u + static_cast<std::uint64_t>(i) + 1);
      auto y = label(i);
      images.push_back(prototypes_[y] + a_.noise * torch::randn({3, a_.image_size, a_.image_size}, gen));
      labels.push_back(y);
    }
    return {torch::stack(images), torch::tensor(labels, torch::kInt64)};
  }

 private:
  const Args& a_;
  torch::Tensor prototypes_;
};

// DistributedSampler(shuffle=True, drop_last=True) over a fixed global batch: at global step s,
// rank r of W takes perm_epoch[k*G + j*W + r] for j in 0..b-1 (G = b*W, k = step within epoch).
class ShardedOrder {
 public:
  ShardedOrder(std::int64_t dataset, std::int64_t per_rank, int rank, int world, std::uint64_t seed)
      : dataset_(dataset), per_rank_(per_rank), rank_(rank), world_(world), seed_(seed) {
    auto global = per_rank * world;
    if (global > dataset) {
      throw ddp::UsageError(
          fmt::format("the global batch {} is larger than the dataset ({} samples); "
                      "lower the batch or raise --dataset-size",
                      global, dataset));
    }
    steps_per_epoch_ = dataset / global;
  }
  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  std::vector<std::int64_t> indices(std::int64_t step) {
    auto epoch = step / steps_per_epoch_;
    if (epoch != epoch_) {
      perm_ = torch::randperm(dataset_, seeded(seed_ + static_cast<std::uint64_t>(epoch)), torch::kInt64);
      epoch_ = epoch;
    }
    auto k = step % steps_per_epoch_;
    auto base = k * per_rank_ * world_;
    auto p = perm_.accessor<std::int64_t, 1>();
    std::vector<std::int64_t> out;
    out.reserve(static_cast<std::size_t>(per_rank_));
    for (std::int64_t j = 0; j < per_rank_; ++j) out.push_back(p[base + j * world_ + rank_]);
    return out;
  }

 private:
  std::int64_t dataset_, per_rank_;
  int rank_, world_;
  std::uint64_t seed_;
  std::int64_t steps_per_epoch_ = 1;
  std::int64_t epoch_ = -1;
  torch::Tensor perm_;
};

// --- checkpoints ---

fs::path checkpoint_path(const Args& a) { return fs::path(a.checkpoint_dir) / "checkpoint.pt"; }

void save_checkpoint(const Args& a, SmallResNet& model, torch::optim::SGD& opt, std::int64_t step) {
  fs::create_directories(a.checkpoint_dir);
  torch::serialize::OutputArchive archive;
  model->save(archive);
  torch::serialize::OutputArchive opt_archive;
  opt.save(opt_archive);
  archive.write("optimizer", opt_archive);
  archive.write("step", torch::tensor(step, torch::kInt64));
  auto final_path = checkpoint_path(a);
  auto tmp = final_path;
  tmp += ".tmp." + std::to_string(::getpid());
  archive.save_to(tmp.string());
  fs::rename(tmp, final_path);  // atomic: a reader sees the old or the new checkpoint, never half
}

std::int64_t load_checkpoint(const Args& a, SmallResNet& model, torch::optim::SGD& opt) {
  torch::serialize::InputArchive archive;
  archive.load_from(checkpoint_path(a).string());
  model->load(archive);
  torch::serialize::InputArchive opt_archive;
  archive.read("optimizer", opt_archive);
  opt.load(opt_archive);
  torch::Tensor step;
  archive.read("step", step);
  return step.item<std::int64_t>();
}

void inject_failure(const Args& a, std::int64_t step) {
  std::fprintf(stderr, "injected failure after step %lld (%s)\n", static_cast<long long>(step), a.fail_mode.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  if (a.fail_mode == "exit") std::_Exit(17);
  if (a.fail_mode == "throw") throw std::runtime_error(fmt::format("injected failure after step {}", step));
  std::raise(SIGKILL);
}

// On a restart, every rank continues from the checkpoint when there is one; the step to start at.
std::int64_t resume(const Args& a, const dw::WorkerContext& ctx, SmallResNet& model, torch::optim::SGD& opt) {
  if (ctx.restarted() && !a.checkpoint_dir.empty() && fs::exists(checkpoint_path(a))) {
    const std::int64_t start_step = load_checkpoint(a, model, opt);
    std::printf("resumed from checkpoint at step %lld (attempt %d)\n", static_cast<long long>(start_step),
                ctx.restart_count);
    std::fflush(stdout);
    return start_step;
  }
  if (ctx.restarted()) {
    dw::log_primary(ctx, "attempt {} but no checkpoint in '{}': starting from step 0", ctx.restart_count,
                    a.checkpoint_dir);
  }
  return 0;
}

// The steps since the last report: their mean loss and this rank's throughput, reported every
// --log-every steps as a metric line and a log line.
struct ProgressWindow {
  double loss_sum = 0;
  std::int64_t steps = 0;
  double last_loss = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  void report(const dw::WorkerContext& ctx, const Args& a, std::int64_t done, std::int64_t epoch, std::int64_t per_rank,
              double lr) {
    auto now = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(now - start).count();
    last_loss = loss_sum / static_cast<double>(steps);
    dw::emit_metrics({{"step", done},
                      {"loss", last_loss},
                      {"samples_per_s", secs > 0 ? static_cast<double>(per_rank * steps) / secs : 0.0},
                      {"lr", lr},
                      {"epoch", epoch}});
    dw::log_primary(ctx, "step {}/{}  loss {:.4f}  {:.0f} samples/s per rank  lr {:.4g}", done, a.steps, last_loss,
                    secs > 0 ? static_cast<double>(per_rank * steps) / secs : 0.0, lr);
    loss_sum = 0;
    steps = 0;
    start = now;
  }
};

// One optimizer step on this rank's share of the global batch, gradients averaged across ranks;
// its loss.
double train_step(dw::ProcessGroup& group, SmallResNet& model, torch::optim::SGD& opt, const torch::Tensor& x,
                  const torch::Tensor& y, double lr) {
  for (auto& g : opt.param_groups()) g.options().set_lr(lr);
  dw::broadcast_buffers(group, *model);  // DDP's broadcast_buffers: one set of BatchNorm statistics
  auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
  opt.zero_grad();
  loss.backward();
  dw::average_gradients(group, *model);
  opt.step();
  return loss.item<double>();
}

int train(const Args& a) {
  ddp::init_logging(a.log_level);
  auto ctx = dw::parse_worker_context(dw::process_env());
  if (a.threads > 0) torch::set_num_threads(a.threads);
  auto per_rank = ctx.batch.resolve_per_rank_batch(ctx.world_size, a.batch_size);
  auto started = std::chrono::steady_clock::now();

  dw::ProcessGroup group(ctx);
  dw::log_primary(ctx, "{} rank(s), per-rank batch {}, global batch {}, lr {} × {}, attempt {}", ctx.world_size,
                  per_rank, per_rank * ctx.world_size, a.lr, ctx.batch.lr_scale, ctx.restart_count);

  torch::manual_seed(a.seed + static_cast<std::uint64_t>(ctx.rank));  // different on purpose: rank 0's wins below
  SmallResNet model(a.width, a.classes);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(a.lr).momentum(0.9).weight_decay(5e-4));
  const std::int64_t start_step = resume(a, ctx, model, opt);
  dw::broadcast_parameters(group, *model);

  SyntheticImages data(a);
  ShardedOrder order(data.size(), per_rank, ctx.rank, ctx.world_size, a.seed);
  int fail_rank = a.fail_rank >= 0 ? a.fail_rank : ctx.world_size - 1;
  ProgressWindow window;
  for (std::int64_t step = start_step; step < a.steps; ++step) {
    double lr = ctx.batch.learning_rate(a.lr, step);
    auto [x, y] = data.batch(order.indices(step));
    window.loss_sum += train_step(group, model, opt, x, y, lr);
    ++window.steps;
    auto done = step + 1;
    if (done % a.log_every == 0 || done == a.steps)
      window.report(ctx, a, done, step / order.steps_per_epoch(), per_rank, lr);
    if (!a.checkpoint_dir.empty() && a.checkpoint_every > 0 && done % a.checkpoint_every == 0 && ctx.is_primary()) {
      save_checkpoint(a, model, opt, done);
      dw::log_primary(ctx, "checkpoint at step {} in {}", done, checkpoint_path(a).string());
    }
    if (done == a.fail_at_step && ctx.rank == fail_rank && ctx.restart_count == 0) inject_failure(a, done);
  }
  group.barrier();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("final step=%lld loss=%.6f param_hash=%016llx seconds=%.3f\n", static_cast<long long>(a.steps),
              window.last_loss, static_cast<unsigned long long>(dw::parameter_hash(*model)), secs);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"Data-parallel ResNet-style CNN on synthetic images (ddp-launch worker SDK example)"};
  app.add_option("--steps", a.steps, "Optimizer steps in total")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--batch-size", a.batch_size, "Per-rank batch when DDP_PER_RANK_BATCH/DDP_GLOBAL_BATCH are unset")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--lr", a.lr, "Base learning rate (× DDP_LR_SCALE)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--classes", a.classes, "Number of classes")->check(CLI::Range(2, 1000))->capture_default_str();
  app.add_option("--image-size", a.image_size, "Image side in pixels")
      ->check(CLI::Range(8, 256))
      ->capture_default_str();
  app.add_option("--width", a.width, "Channels of the first stage")->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--dataset-size", a.dataset_size, "Samples per epoch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", a.seed, "Seed of the data, the order and the initial weights")->capture_default_str();
  app.add_option("--noise", a.noise, "Noise added to the class prototypes")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--log-every", a.log_every, "Steps between metric lines")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--checkpoint-dir", a.checkpoint_dir, "Rank 0 checkpoints here; every rank resumes from it");
  app.add_option("--checkpoint-every", a.checkpoint_every, "Steps between checkpoints")->capture_default_str();
  app.add_option("--fail-at-step", a.fail_at_step, "Fail once (attempt 0) after this step, for restart tests");
  app.add_option("--fail-rank", a.fail_rank, "Rank that fails (default: the last)");
  app.add_option("--fail-mode", a.fail_mode, "kill (SIGKILL), exit (code 17) or throw (uncaught exception)")
      ->check(CLI::IsMember({"kill", "exit", "throw"}))
      ->capture_default_str();
  app.add_option("--threads", a.threads, "Intra-op threads (0: libtorch's default, OMP_NUM_THREADS)");
  app.add_option("--log-level", a.log_level, "trace, debug, info, warn or error");
  CLI11_PARSE(app, argc, argv);
  return dw::run_main([&] { return train(a); });
}
