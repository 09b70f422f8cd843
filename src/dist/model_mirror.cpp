#include "llmbench/dist/model_mirror.h"

#include <algorithm>
#include <cstring>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace llmbench::dist {
namespace {

using Clock = std::chrono::steady_clock;

// Header fields (int64 each): op, sequence, args [kArgs], payload length, inline payload.
constexpr int kOp = 0, kSequence = 1, kFirstArg = 2;
constexpr int kLength = kFirstArg + ModelMirror::kArgs, kInlineAt = kLength + 1;
constexpr auto kMaxKeepalive = std::chrono::milliseconds(5000);

#ifdef LLMBENCH_WITH_CUDA
// Waits for the current stream without spinning a core through a long idle period: busy for the first
// 50 ms, then polls every 100 µs. The wait covers this rank's previous step (queued before the broadcast)
// and rank 0's sampling, so a busy window shorter than a step (Llama-3-70B tp 2: ~20 ms) would add up to
// a poll interval to every step, delaying the next step's all-reduces on every rank.
void wait_stream_politely() {
  at::cuda::CUDAEvent done;
  done.record(c10::cuda::getCurrentCUDAStream());
  const auto busy_until = Clock::now() + std::chrono::milliseconds(50);
  while (!done.query())
    if (Clock::now() > busy_until) std::this_thread::sleep_for(std::chrono::microseconds(100));
}
#endif

// Token ids the Model would refuse, refused before any rank is told (a usage error must not end the group).
void check_ids(const ModelConfig& config, const std::vector<std::int64_t>& ids) {
  for (auto id : ids)
    if (id < 0 || id >= config.vocab_size)
      throw UsageError(cat("token id ", id, " is outside the vocabulary [0, ", config.vocab_size, ")"));
}

}  // namespace

const char* to_string(MirrorOp op) {
  switch (op) {
    case MirrorOp::stop: return "stop";
    case MirrorOp::keepalive: return "keepalive";
    case MirrorOp::allocate_cache: return "allocate_cache";
    case MirrorOp::reset_cache: return "reset_cache";
    case MirrorOp::prefill_slots: return "prefill_slots";
    case MirrorOp::decode_slots: return "decode_slots";
    case MirrorOp::move_slot: return "move_slot";
    case MirrorOp::free_slot: return "free_slot";
    case MirrorOp::capture_graph: return "capture_graph";
    case MirrorOp::graph_step: return "graph_step";
    case MirrorOp::mixed_slots: return "mixed_slots";
    case MirrorOp::count_: break;
  }
  return "unknown";
}

ModelMirror::ModelMirror(Model& model) : ModelMirror(model, true) {}

ModelMirror::ModelMirror(Model& model, bool leader) : model_(model), group_(model.group()) {
  if (!group_) return;
  if (leader && group_->rank() != 0)
    throw Error(cat("ModelMirror: rank ", group_->rank(), " cannot drive the group (rank 0 does; the others follow)"));
  if (!leader) return;
  keepalive_ = std::max(std::chrono::milliseconds(1), std::min(kMaxKeepalive, group_->timeout() / 4));
  last_sent_ = Clock::now();
  keepalive_thread_ = std::thread([this] { keepalive_loop(); });
}

ModelMirror::~ModelMirror() {
  try {
    stop();
  } catch (const std::exception& e) {
    log::warn(cat("tensor-parallel stop: ", first_line(e.what())));
  }
}

int ModelMirror::world() const { return group_ ? group_->world() : 1; }

std::int64_t ModelMirror::allocate_cache(std::int64_t batch, std::int64_t max_len) {
  check_context(model_.config(), max_len);  // here, before the other ranks are told: a usage error stays one
  Command c;
  c.op = MirrorOp::allocate_cache;
  c.args = {batch, max_len};
  call(c);
  return model_.cache().bytes();
}

void ModelMirror::reset_cache() {
  Command c;
  c.op = MirrorOp::reset_cache;
  call(c);
}

torch::Tensor ModelMirror::prefill_slots(std::int64_t first, const torch::Tensor& ids, const std::vector<std::int64_t>& lengths) {
  if (ids.dim() != 2 || ids.size(0) != static_cast<std::int64_t>(lengths.size()))
    throw Error(cat("prefill_slots: ids ", ids.sizes(), " for ", lengths.size(), " lengths"));
  torch::Tensor flat_ids = ids.to(torch::kCPU, torch::kInt64).contiguous().reshape({-1});  // [k P]
  check_ids(model_.config(), std::vector<std::int64_t>(flat_ids.data_ptr<std::int64_t>(),
                                                      flat_ids.data_ptr<std::int64_t>() + flat_ids.numel()));
  Command c;
  c.op = MirrorOp::prefill_slots;
  c.args = {first, ids.size(0), ids.size(1)};
  c.payload = torch::cat({torch::tensor(lengths, torch::kInt64), flat_ids});  // [k + k P]
  return call(c);
}

torch::Tensor ModelMirror::decode_slots(const torch::Tensor& tokens, std::int64_t columns) {
  Command c;
  c.op = MirrorOp::decode_slots;
  c.args = {columns};
  c.payload = tokens;  // [R] int64
  return call(c);
}

torch::Tensor ModelMirror::mixed_slots(std::int64_t rows, std::int64_t columns, const std::vector<std::int64_t>& ids,
                                       const std::vector<ChunkSpan>& chunks) {
  check_ids(model_.config(), ids);
  const auto n = static_cast<std::int64_t>(ids.size()), k = static_cast<std::int64_t>(chunks.size());
  Command c;
  c.op = MirrorOp::mixed_slots;
  c.args = {rows, columns, k, n};
  std::vector<std::int64_t> flat = ids;  // [n + 4 k]
  for (const ChunkSpan& s : chunks) flat.insert(flat.end(), {s.row, s.start, s.length, s.last ? 1 : 0});
  c.payload = torch::tensor(flat, torch::kInt64);
  return call(c);
}

void ModelMirror::move_slot(std::int64_t from, std::int64_t to, std::int64_t columns) {
  Command c;
  c.op = MirrorOp::move_slot;
  c.args = {from, to, columns};
  call(c);
}

void ModelMirror::free_slot(std::int64_t slot) {
  Command c;
  c.op = MirrorOp::free_slot;
  c.args = {slot};
  call(c);
}

void ModelMirror::capture_graph(std::int64_t rows, std::int64_t columns) {
  Command c;
  c.op = MirrorOp::capture_graph;
  c.args = {rows, columns};
  call(c);
}

torch::Tensor ModelMirror::graph_step(std::int64_t rows, std::int64_t columns, const torch::Tensor& tokens) {
  Command c;
  c.op = MirrorOp::graph_step;
  c.args = {rows, columns};
  c.payload = tokens;  // [n] int64
  return call(c);
}

torch::Tensor ModelMirror::call(const Command& c) {
  if (!group_) return execute(c);
  std::lock_guard<std::mutex> lock(call_mu_);
  if (auto f = failure()) {
    // The group is not used again, but the engine still frees its rows: the calls that only change this
    // rank's slot bookkeeping run here alone; those that need the other ranks throw.
    if (c.op == MirrorOp::free_slot || c.op == MirrorOp::move_slot || c.op == MirrorOp::reset_cache) return execute(c);
    throw Error(*f);
  }
  if (stopped_) throw Error(cat("tensor-parallel ", to_string(c.op), " after the other ranks were stopped"));
  try {
    send(c);
  } catch (const std::exception& e) {
    fail(cat("tensor-parallel group: sending ", to_string(c.op), " to the other ranks failed: ", first_line(e.what())));
    throw Error(*failure());
  }
  try {
    return execute(c);
  } catch (const std::exception& e) {
    // The other ranks may be waiting in a collective this rank never reached: the group is out of step.
    fail(cat("tensor-parallel ", to_string(c.op), " failed on rank 0: ", first_line(e.what())));
    throw Error(*failure());
  }
}

torch::Tensor ModelMirror::execute(const Command& c) {
  const auto& a = c.args;
  const std::int64_t n = c.payload.defined() ? c.payload.numel() : 0;
  auto need = [&](std::int64_t want) {
    if (n != want) throw Error(cat(to_string(c.op), ": payload of ", n, " values, want ", want));
  };
  switch (c.op) {
    case MirrorOp::stop:
    case MirrorOp::keepalive:
    case MirrorOp::count_:
      return {};
    case MirrorOp::allocate_cache:
      model_.allocate_cache(a[0], a[1]);
      return {};
    case MirrorOp::reset_cache:
      model_.reset_cache();
      return {};
    case MirrorOp::prefill_slots: {
      const std::int64_t k = a[1], columns = a[2];
      if (k < 1 || columns < 1) throw Error(cat("prefill_slots: ", k, " rows of ", columns, " columns"));
      need(k + k * columns);
      torch::Tensor lengths = c.payload.narrow(0, 0, k).cpu();  // [k] int64
      const auto* l = lengths.data_ptr<std::int64_t>();
      torch::Tensor ids = c.payload.narrow(0, k, k * columns).view({k, columns});  // [k, P] int64
      return model_.prefill_slots(a[0], ids, std::vector<std::int64_t>(l, l + k));
    }
    case MirrorOp::decode_slots:
      return model_.decode_slots(c.payload, a[0]);
    case MirrorOp::move_slot:
      model_.move_slot(a[0], a[1], a[2]);
      return {};
    case MirrorOp::free_slot:
      model_.free_slot(a[0]);
      return {};
    case MirrorOp::capture_graph:
      graphs_[{a[0], a[1]}] = std::make_unique<DecodeGraph>(model_, a[0], a[1]);
      return {};
    case MirrorOp::mixed_slots: {
      const std::int64_t k = a[2], ids = a[3];
      if (k < 0 || ids < 1) throw Error(cat("mixed_slots: ", k, " chunks, ", ids, " ids"));
      need(ids + 4 * k);
      torch::Tensor flat = c.payload.cpu();  // [n + 4 k] int64
      const auto* f = flat.data_ptr<std::int64_t>();
      std::vector<ChunkSpan> chunks(k);
      for (std::int64_t j = 0; j < k; ++j) {
        const auto* s = f + ids + 4 * j;
        chunks[j] = ChunkSpan{s[0], s[1], s[2], s[3] != 0};
      }
      return model_.mixed_slots(a[0], a[1], std::vector<std::int64_t>(f, f + ids), chunks);
    }
    case MirrorOp::graph_step: {
      auto it = graphs_.find({a[0], a[1]});
      if (it == graphs_.end()) throw Error(cat("graph_step: no graph of ", a[0], " rows × ", a[1], " columns"));
      return it->second->step(c.payload.to(model_.device()));
    }
  }
  throw Error(cat("tensor-parallel command ", static_cast<std::int64_t>(c.op), " is unknown"));
}

void ModelMirror::send(const Command& c) {
#ifdef LLMBENCH_WITH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;  // the keepalive thread's device too
  if (device().is_cuda()) guard.emplace(device());
#endif
  torch::Tensor payload = c.payload.defined() ? c.payload.to(torch::kCPU, torch::kInt64).contiguous() : torch::Tensor();  // [n]
  const std::int64_t n = payload.defined() ? payload.numel() : 0;
  torch::Tensor header = torch::zeros({kHeader}, torch::kInt64);  // [kHeader] int64 on the host
  auto* h = header.data_ptr<std::int64_t>();
  h[kOp] = static_cast<std::int64_t>(c.op);
  h[kSequence] = ++sequence_;
  std::copy(c.args.begin(), c.args.end(), h + kFirstArg);
  h[kLength] = n;
  if (n > 0 && n <= kInline) std::memcpy(h + kInlineAt, payload.data_ptr<std::int64_t>(), n * sizeof(std::int64_t));
  torch::Tensor wire = header.to(device());
  group_->broadcast_(wire, 0);
  if (n > kInline) {
    torch::Tensor p = payload.to(device());  // [n] int64
    group_->broadcast_(p, 0);
  }
  last_sent_ = Clock::now();
}

ModelMirror::Command ModelMirror::receive() {
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device());
  torch::Tensor wire = torch::empty({kHeader}, i64);  // [kHeader] int64
  group_->broadcast_(wire, 0);
#ifdef LLMBENCH_WITH_CUDA
  if (device().is_cuda()) wait_stream_politely();
#endif
  torch::Tensor header = wire.cpu();
  const auto* h = header.data_ptr<std::int64_t>();
  if (h[kOp] < 0 || h[kOp] >= static_cast<std::int64_t>(MirrorOp::count_))
    throw Error(cat("tensor-parallel command ", h[kOp], " from rank 0 is unknown (a build of another version?)"));
  if (h[kSequence] != ++sequence_)
    throw Error(cat("tensor-parallel commands out of step: got number ", h[kSequence], ", expected ", sequence_));
  Command c;
  c.op = static_cast<MirrorOp>(h[kOp]);
  std::copy(h + kFirstArg, h + kFirstArg + kArgs, c.args.begin());
  const std::int64_t n = h[kLength];
  if (n < 0) throw Error(cat("tensor-parallel ", to_string(c.op), ": payload length ", n));
  if (n > kInline) {
    c.payload = torch::empty({n}, i64);  // [n] int64
    group_->broadcast_(c.payload, 0);
  } else if (n > 0) {
    c.payload = wire.narrow(0, kInlineAt, n);  // [n] int64 on the device
  }
  return c;
}

void ModelMirror::follow(Model& model) {
  ModelMirror m(model, false);
  if (!m.group_) throw Error("ModelMirror::follow: the model has no tensor-parallel group");
  if (m.group_->rank() == 0) throw Error("ModelMirror::follow: rank 0 drives the group, it does not follow");
  torch::NoGradGuard no_grad;
#ifdef LLMBENCH_WITH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;
  if (m.device().is_cuda()) guard.emplace(m.device());
#endif
  for (;;) {
    Command c;
    try {
      c = m.receive();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(cat("waiting for rank 0's next command failed (rank 0 gone, or idle beyond --dist-timeout): ",
                      first_line(e.what())));
    }
    if (c.op == MirrorOp::stop) return;
    try {
      m.execute(c);
    } catch (const std::exception& e) {
      throw Error(cat("tensor-parallel ", to_string(c.op), " failed: ", first_line(e.what())));
    }
  }
}

void ModelMirror::keepalive_loop() {
  std::unique_lock<std::mutex> lock(call_mu_);
  while (!stopped_ && !failure()) {
    const auto due = last_sent_ + keepalive_;
    if (Clock::now() < due) {
      keepalive_cv_.wait_until(lock, due);
      continue;
    }
    try {
      send(Command{});
    } catch (const std::exception& e) {
      fail(cat("tensor-parallel group: keepalive to the other ranks failed: ", first_line(e.what())));
    }
  }
}

void ModelMirror::stop() {
  if (!group_ || group_->rank() != 0) return;
  {
    std::lock_guard<std::mutex> lock(call_mu_);
    if (stopped_) return;
    stopped_ = true;
    if (!failure()) {
      try {
        Command c;
        c.op = MirrorOp::stop;
        send(c);
#ifdef LLMBENCH_WITH_CUDA
        if (device().is_cuda()) c10::cuda::getCurrentCUDAStream(device().index()).synchronize();
#endif
      } catch (const std::exception& e) {
        fail(cat("tensor-parallel group: stopping the other ranks failed: ", first_line(e.what())));
      }
    }
  }
  keepalive_cv_.notify_all();
  if (keepalive_thread_.joinable()) keepalive_thread_.join();
}

std::optional<std::string> ModelMirror::failure() const {
  std::lock_guard<std::mutex> lock(failure_mu_);
  return failure_;
}

void ModelMirror::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (!failure_) failure_ = why;
}

}  // namespace llmbench::dist
