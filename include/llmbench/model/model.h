#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "llmbench/dist/process_group.h"
#include "llmbench/model/attention.h"
#include "llmbench/model/decoder.h"
#include "llmbench/model/kv_cache.h"
#include "llmbench/model/linear.h"
#include "llmbench/model/model_config.h"
#include "llmbench/model/rope.h"
#include "llmbench/model/sampler.h"
#include "llmbench/model/weights.h"

// The model facade the runner and the CLI use:
//   auto m = Model::load({"qwen2.5-7b", "bfloat16", "cuda", "eager", seed});
//   m->allocate_cache(B, P + N);         // once per (batch, max length); returns bytes
//   m->reset_cache();                    // before each timed run; frees nothing
//   logits = m->prefill(ids, mask);      // [B, P] → [B, V] float32, last position only
//   logits = m->decode_step(tokens);     // [B] → [B, V] float32; capturable (no host sync)
//
// The slot engine (engine/) uses the same cache as B independent slots of T_max columns each:
//   m->allocate_cache(slots, max_context); m->reset_cache();
//   logits = m->prefill_slot(3, ids);    // [P] → [V] float32: slot 3 holds that prompt alone
//   logits = m->prefill_slots(3, ids, lens); // [k, P] right-padded → [k, V]: slots 3.. in one pass
//   logits = m->decode_slots(tokens, C); // [R] → [R, V]: one step of rows [0, R) over columns [0, C)
//   logits = m->mixed_slots(R, C, ids, chunks);  // decode rows [0, R) + prompt chunks in one forward
//   m->move_slot(5, 3, len); m->free_slot(5);  // compaction when the request of row 3 leaves
namespace llmbench {

// "float32|fp32", "bfloat16|bf16", "float16|fp16|half" → dtype; UsageError otherwise.
torch::Dtype parse_dtype(const std::string& name);
std::string dtype_name(torch::Dtype dtype);
// UsageError for a dtype this build cannot compute in on `device` (float16 on the CPU with libtorch 1.x).
void check_dtype_supported(const std::string& dtype, const torch::Device& device);

struct ModelLoadOptions {
  std::string model = "tiny";   // preset, directory or org/name
  std::string dtype = "float32";
  std::string device = "cpu";   // cpu | cuda | cuda:N | auto
  std::string attn = "eager";   // eager | sdpa
  std::uint64_t seed = 0;       // random weights only
  std::string quant = "bf16";   // bf16 (model dtype) | int8 | fp8: the matmul weights (model/quantize.h)
  // Tensor parallelism: this rank's slice of the weights and KV heads, all-reduces in the decoder
  // (dist/shard.h). Null: the whole model on one device.
  std::shared_ptr<dist::ProcessGroup> group = nullptr;
};

struct ModelInfo {
  std::string spec;             // as given
  std::string preset;           // empty unless a preset
  ModelConfig config;
  std::string weights;          // "checkpoint" | "random"
  std::string checkpoint_dir;   // empty for random weights
  std::string dtype;
  std::string device;
  std::string attn;
  double load_ms = 0;           // resolve + read/draw + convert + copy (device synchronised)
  std::string quant = "bf16";   // bf16 | int8 | fp8 (weight_bytes counts the quantized tensors and scales)
  std::int64_t weight_bytes = 0;  // on this rank's device
  int tp = 1;                   // tensor-parallel ranks
};

struct GenerateOptions {
  std::int64_t max_new_tokens = 32;
  SamplingParams sampling;
  bool ignore_eos = false;      // true: always max_new_tokens (benchmarks); false: a row stops at EOS
};

struct GenerateResult {
  std::vector<std::vector<std::int64_t>> tokens;  // new tokens per prompt (EOS included when hit)
  torch::Tensor last_logits;                      // [B, V] float32 on the CPU: the prefill's
};

class Model {
 public:
  static std::unique_ptr<Model> load(const ModelLoadOptions& options);

  const ModelInfo& info() const { return info_; }
  const ModelConfig& config() const { return info_.config; }
  // What this rank runs: config() with its share of heads and MLP columns (config() itself when tp is 1).
  const ModelConfig& rank_config() const { return rank_config_; }
  // The tensor-parallel group; null for one rank.
  const std::shared_ptr<dist::ProcessGroup>& group() const { return group_; }
  torch::Device device() const { return device_; }
  torch::Dtype dtype() const { return dtype_; }
  void set_attn(AttnImpl attn);
  // Fused CUDA kernels in the decode step (see Decoder::set_fused); off by default.
  void set_fused(bool fused);
  // True when the decode step currently takes the fused kernels.
  bool fused_active() const;
  // On CUDA with the cuBLASLt path on (the default; llmbench/model/linear.h): times cuBLASLt's candidates for the layers'
  // matmuls (qkv, o, gate_up, down; model-dtype ones) at each row count, ahead of the measured work, so that
  // prefills of those many tokens (their row bucket) take the fastest. Returns the seconds it took; 0 and
  // nothing done otherwise.
  double tune_gemms(const std::vector<std::int64_t>& rows);
  // The CUDA GEMV kernel for the decode step's matmuls (B ≤ 16; llmbench/model/linear.h: for bf16 weights
  // only one row of a wide matrix); off by default here, on by default in `run` and `profile`.
  void set_gemv(bool gemv);
  bool gemv_enabled() const;
  // True when a decode step of `rows` rows takes the GEMV kernel for any matmul (a layer's or the head).
  bool gemv_active(std::int64_t rows = 1) const;
  // ... and that kernel is the tensor-core one (llmbench/model/linear.h gemv_uses_mma).
  bool gemv_mma(std::int64_t rows = 1) const;
  // The fused decode step attends with the tensor-core decode-attention kernel (rows of the allocated cache).
  bool decode_attention_mma(std::int64_t rows) const;
  // How fp8 weights multiply beyond the GEMV's rows (prefill): dequantize-then-GEMM or _scaled_mm.
  void set_fp8_gemm(Fp8Gemm gemm);

  // The KV cache's storage from the next allocate_cache on (llmbench/model/kv_cache.h): the model dtype
  // (default) or fp8 with per-head scales. fp8 throws UsageError off CUDA or on a libtorch without fp8.
  void set_kv_format(KvFormat format);
  KvFormat kv_format() const { return kv_format_; }

  // Allocates the KV cache, rope tables and decode state for (batch, max_len); a no-op when the shape
  // and format are unchanged. Throws UsageError when max_len exceeds the model's positions. Returns
  // cache bytes (storage and fp8 scales).
  std::int64_t allocate_cache(std::int64_t batch, std::int64_t max_len);
  // Zeroes the cache and the decode state in place.
  void reset_cache();
  const KvCache& cache() const { return cache_; }

  // ids [B, P] int64 (values in [0, vocab)), attention_mask [B, P] (1 token, 0 left pad; undefined: all
  // ones), on any device → last-position logits [B, V] float32 on the model's device.
  // Without a mask the prefill reads nothing back to the host (a CUDA graph can capture it: PrefillGraph).
  torch::Tensor prefill(const torch::Tensor& ids, const torch::Tensor& attention_mask = {});
  // After PrefillGraph replayed a prefill of prompt_len columns: the host's mirror of the cache column.
  void note_replayed_prefill(std::int64_t prompt_len);
  // tokens [B] int64 → logits [B, V] float32. Throws when the cache is full (host-side counter, no sync).
  torch::Tensor decode_step(const torch::Tensor& tokens);

  // Teacher forcing for verification: ids [B, S] (no padding; S ≤ the cache length) through the plain
  // prefill path (no fused kernels, no graph) → hidden states after the final norm, [B, S, H] model dtype.
  // Overwrites the cache: call reset_cache() before the next generate.
  torch::Tensor forward_normed(const torch::Tensor& ids);
  // The lm_head in float32 (a quantized one dequantized: q · scale), for teacher-forced references.
  torch::Tensor lm_head_float32() const;  // [V, H] float32

  // Left-pads the prompts, allocates the cache for P + max_new_tokens, prefills and decodes.
  // Throws UsageError for an empty prompt, an id outside the vocabulary or a too-long context.
  GenerateResult generate(const std::vector<std::vector<std::int64_t>>& prompts, const GenerateOptions& options);

  // Slots: each cache row is a request of its own length. The caller tracks lengths on the host.
  // Batch-1 prefill of ids [P] (any device) into slot `slot`'s columns [0, P); sets that row's valid
  // columns, position P, column P and marks it active; other rows are untouched. → last logits [V] float32.
  torch::Tensor prefill_slot(std::int64_t slot, const torch::Tensor& ids);
  // Prefill of k prompts in one pass into slots [first, first + k): ids [k, P] right-padded (row i holds
  // its lengths[i] tokens in columns [0, lengths[i]), anything after), lengths on the host. Each slot ends
  // up exactly as prefill_slot leaves it (valid columns [0, len), position and column len): the pads sit
  // after the real tokens, so causal attention never lets a real token see them, and decode overwrites
  // their columns. → each row's last-token logits [k, V] float32.
  torch::Tensor prefill_slots(std::int64_t first, const torch::Tensor& ids, const std::vector<std::int64_t>& lengths);
  // One decode step of rows [0, R), R = tokens.size(0), over cache columns [0, columns): tokens [R] int64
  // → logits [R, V] float32. Every active row among them must have its column < `columns` (not checked:
  // no host sync); inactive rows compute garbage and stay put. Capturable per (R, columns).
  torch::Tensor decode_slots(const torch::Tensor& tokens, std::int64_t columns);
  // Chunked prefill mixed into a decode step of rows [0, R) over cache columns [0, columns)
  // (Decoder::mixed_step): ids on the host, the R rows' decode inputs (any value for inactive rows) then
  // each chunk's prompt tokens in order. Chunk rows must be in [0, R), start + length ≤ columns, and every
  // row's column < columns. → logits [R, V] float32 on the device.
  torch::Tensor mixed_slots(std::int64_t rows, std::int64_t columns, const std::vector<std::int64_t>& ids,
                            const std::vector<ChunkSpan>& chunks);
  // Copies slot `from` (KV columns [0, columns), position, column, valid row, active) into slot `to`.
  void move_slot(std::int64_t from, std::int64_t to, std::int64_t columns);
  // Marks slot `slot` inactive: column 0, position 0, no valid columns.
  void free_slot(std::int64_t slot);

 private:
  Model() = default;
  void check_slot(std::int64_t slot, const char* what) const;

  ModelInfo info_;
  ModelConfig rank_config_;
  std::shared_ptr<dist::ProcessGroup> group_;
  torch::Device device_{torch::kCPU};
  torch::Dtype dtype_ = torch::kFloat32;
  Weights weights_;
  std::unique_ptr<Decoder> decoder_;
  KvCache cache_;
  KvFormat kv_format_ = KvFormat::plain;
  Rope rope_;
  DecodeState state_;
  std::int64_t next_column_ = 0;  // host mirror of state_.column, to refuse writes past T_max
};

}  // namespace llmbench
