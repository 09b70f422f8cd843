#!/usr/bin/env python3
"""Tiny random HF checkpoints + HF transformers reference outputs for llmbench's model tests.

Usage (on a host with torch, transformers, safetensors; no network needed):
    python3 scripts/reference/make_model_fixtures.py OUTDIR

Writes OUTDIR/<name>/{config.json, *.safetensors[, model.safetensors.index.json], reference.json} for
  llama3_tied   Llama, llama3 rope scaling, tied embeddings, float32
  qwen2_bias    Qwen2, q/k/v biases, untied lm_head, float32
  llama_sharded Llama, default rope, untied, float32, split into 2+ shards with an index
  llama_bf16    Llama, linear rope scaling, untied, stored in bfloat16
reference.json holds, per batch of two prompts (one equal-length, one left-padded unequal-length):
  input_ids / attention_mask (as fed to HF), float32 last-position logits of the prefill, and 24 greedy
  new tokens (EOS ignored); plus, when CUDA is available, the same in bfloat16 on cuda ("cuda_bf16").
Deterministic: fixed seeds, CPU float32 references; rerunning overwrites the same files.
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

NEW_TOKENS = 24
PAD_ID = 0
COMMON = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
              pad_token_id=PAD_ID, initializer_range=0.02, use_cache=True)

# name -> (config class, kwargs, rope_theta, rope scaling dict or None, storage dtype, max shard size)
SPECS = [
    ("llama3_tied", LlamaConfig,
     dict(vocab_size=320, tie_word_embeddings=True, max_position_embeddings=131072),
     500000.0,
     dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
          original_max_position_embeddings=8192),
     torch.float32, None),
    ("qwen2_bias", Qwen2Config,
     dict(vocab_size=300, tie_word_embeddings=False, max_position_embeddings=32768, rms_norm_eps=1e-6,
          use_sliding_window=False),
     1000000.0, None, torch.float32, None),
    ("llama_sharded", LlamaConfig,
     dict(vocab_size=300, tie_word_embeddings=False, max_position_embeddings=4096),
     10000.0, None, torch.float32, "300KB"),
    ("llama_bf16", LlamaConfig,
     dict(vocab_size=300, tie_word_embeddings=False, max_position_embeddings=4096),
     10000.0, dict(rope_type="linear", factor=2.0), torch.bfloat16, None),
]

# Two batches of two prompts; ids avoid the specials 0..2.
PROMPTS = {
    "equal": [[17, 45, 203, 9, 88, 150, 31], [250, 4, 66, 123, 77, 5, 199]],
    "unequal": [[12, 99, 140, 7, 215, 33, 61, 180, 25], [44, 201, 8, 97]],
}


def make_config(cls, kwargs, theta, scaling):
    kw = dict(COMMON)
    kw.update(kwargs)
    rope = dict(rope_type="default") if scaling is None else dict(scaling)
    rope["rope_theta"] = theta
    try:  # transformers >= 5 keeps theta and scaling together in rope_parameters
        cfg = cls(rope_parameters=rope, **kw)
        if getattr(cfg, "rope_parameters", None) is None:
            raise TypeError("no rope_parameters")
    except TypeError:  # transformers 4.x
        legacy = None if scaling is None else dict(scaling, type=scaling["rope_type"])
        cfg = cls(rope_theta=theta, rope_scaling=legacy, **kw)
    cfg._attn_implementation = "eager"
    return cfg


def randomize(model, seed):
    """Overwrite HF's init (zero biases, unit norms, tiny weights) so every parameter matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if "norm" in name:
                p.copy_(1.0 + 0.2 * noise)
            elif name.endswith("bias"):
                p.copy_(0.5 * noise)
            else:
                p.copy_(noise / np.sqrt(p.shape[-1]))


def reshard(path):
    """Split model.safetensors into two shards + index, as HF does, when save_pretrained did not shard."""
    from safetensors.torch import load_file, save_file
    single = os.path.join(path, "model.safetensors")
    tensors = load_file(single)
    names = sorted(tensors)
    half = len(names) // 2
    weight_map, total = {}, 0
    for i, part in enumerate((names[:half], names[half:])):
        fname = f"model-{i + 1:05d}-of-00002.safetensors"
        save_file({n: tensors[n].contiguous() for n in part}, os.path.join(path, fname), metadata={"format": "pt"})
        for n in part:
            weight_map[n] = fname
            total += tensors[n].numel() * tensors[n].element_size()
    os.remove(single)
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def load(path, dtype, device):
    try:
        m = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="eager")
    except TypeError:
        m = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype, attn_implementation="eager")
    return m.to(device).eval()


def left_pad(prompts):
    n = max(len(p) for p in prompts)
    ids = [[PAD_ID] * (n - len(p)) + p for p in prompts]
    mask = [[0] * (n - len(p)) + [1] * len(p) for p in prompts]
    return torch.tensor(ids), torch.tensor(mask)


def hf_positions(mask):
    pos = mask.long().cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 1)  # what HF generate() feeds for left-padded rows


@torch.no_grad()
def manual_greedy(model, ids, mask):
    """Greedy by full recompute each step: an independent check of generate()."""
    ids, mask = ids.clone(), mask.clone()
    out, margins = [], []
    for _ in range(NEW_TOKENS):
        logits = model(input_ids=ids, attention_mask=mask, position_ids=hf_positions(mask),
                       use_cache=False).logits[:, -1, :].float()
        top2 = logits.topk(2, dim=-1).values
        margins.append((top2[:, 0] - top2[:, 1]).min().item())
        nxt = logits.argmax(-1, keepdim=True)
        out.append(nxt)
        ids = torch.cat([ids, nxt], 1)
        mask = torch.cat([mask, torch.ones_like(nxt)], 1)
    return torch.cat(out, 1), min(margins)


@torch.no_grad()
def reference(model, device):
    batches = []
    for name, prompts in PROMPTS.items():
        ids, mask = left_pad(prompts)
        ids, mask = ids.to(device), mask.to(device)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=hf_positions(mask),
                       use_cache=False).logits[:, -1, :].float().cpu()
        manual, margin = manual_greedy(model, ids, mask)
        gen_ok = None
        try:  # HF's own generate() with the KV cache, EOS disabled: must agree with the manual loop
            model.generation_config.eos_token_id = None
            gen = model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                                 max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                 eos_token_id=None, pad_token_id=PAD_ID)[:, ids.shape[1]:]
            gen_ok = bool(torch.equal(gen.cpu(), manual.cpu()))
        except Exception as e:
            print(f"  generate() failed ({type(e).__name__}: {e}); manual greedy only", file=sys.stderr)
        greedy = manual.cpu()  # pure argmax over HF's logits = greedy with EOS ignored
        batches.append(dict(name=name, prompts=prompts, input_ids=ids.cpu().tolist(),
                            attention_mask=mask.cpu().tolist(), pad_token_id=PAD_ID,
                            last_logits=[[float(x) for x in row] for row in logits.tolist()],
                            greedy_ids=greedy.tolist(), min_top2_margin=margin,
                            generate_matches_manual=gen_ok))
    return batches


def build(outdir, spec, seed):
    name, cls, kwargs, theta, scaling, dtype, shard = spec
    path = os.path.join(outdir, name)
    shutil.rmtree(path, ignore_errors=True)
    torch.manual_seed(seed)
    cfg = make_config(cls, kwargs, theta, scaling)
    model = AutoModelForCausalLM.from_config(cfg)
    randomize(model, seed)
    model = model.to(dtype)
    save = dict(max_shard_size=shard) if shard else {}
    model.save_pretrained(path, **save)
    if shard and not os.path.exists(os.path.join(path, "model.safetensors.index.json")):
        reshard(path)
    for extra in ("generation_config.json",):  # not read by llmbench; keeps fixtures small
        if os.path.exists(os.path.join(path, extra)):
            os.remove(os.path.join(path, extra))

    ref = dict(name=name, transformers_version=transformers.__version__, torch_version=torch.__version__,
               storage_dtype=str(dtype).replace("torch.", ""), new_tokens=NEW_TOKENS,
               float32=reference(load(path, torch.float32, "cpu"), "cpu"), cuda_bf16=None)
    if torch.cuda.is_available():
        ref["cuda_bf16"] = reference(load(path, torch.bfloat16, "cuda"), "cuda")
    with open(os.path.join(path, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")

    files = sorted(os.listdir(path))
    size = sum(os.path.getsize(os.path.join(path, x)) for x in files)
    print(f"{name}: {len(files)} files, {size / 1024:.0f} KB: {', '.join(files)}")
    for b in ref["float32"]:
        print(f"  f32 {b['name']}: greedy[0][:8]={b['greedy_ids'][0][:8]} min_margin={b['min_top2_margin']:.2e}"
              f" generate==manual: {b['generate_matches_manual']}")
    if ref["cuda_bf16"]:
        for b, f32 in zip(ref["cuda_bf16"], ref["float32"]):
            same = sum(x == y for x, y in zip(b["greedy_ids"][0], f32["greedy_ids"][0]))
            print(f"  bf16 cuda {b['name']}: greedy[0][:8]={b['greedy_ids'][0][:8]} ({same}/{NEW_TOKENS} same as f32)")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.use_deterministic_algorithms(True, warn_only=True)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"cuda: {torch.cuda.is_available()}")
    for i, spec in enumerate(SPECS):
        build(outdir, spec, seed=1234 + i)
    print(f"wrote {len(SPECS)} fixtures under {outdir}")


if __name__ == "__main__":
    main()
