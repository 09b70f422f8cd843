#!/usr/bin/env python3
"""Calibrates llmbench's verification tolerance on HF transformers itself (GPU host).

For each model width, a model with the published shapes but `--layers` decoder layers and seeded random
weights is built in float32; a bfloat16 copy generates `--new` greedy tokens from random prompts; the float32
model is teacher-forced on those tokens, and at each generated position
    gap = (fp32 max logit - fp32 logit of the bf16 token) / (fp32 max logit - fp32 min logit),
the quantity llmbench's verification bounds (README "Verification"). Prints the worst and the 99th-percentile
gap per model: an honest bf16 implementation shows gaps of this size, so the tolerance must sit above them.

    python3 scripts/reference/verify_calibration.py [--layers 4] [--batch 4] [--prompt 128] [--new 64]
"""
import argparse
import copy
import json
import sys

WIDTHS = {
    "qwen2.5-7b": ("Qwen2Config", dict(hidden_size=3584, intermediate_size=18944, num_attention_heads=28,
                                       num_key_value_heads=4, vocab_size=152064, rms_norm_eps=1e-6,
                                       max_position_embeddings=32768, tie_word_embeddings=False), 1e6),
    "llama-3-8b": ("LlamaConfig", dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                                       num_key_value_heads=8, vocab_size=128256, rms_norm_eps=1e-5,
                                       max_position_embeddings=8192, tie_word_embeddings=False), 5e5),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attn", default="eager")
    args = ap.parse_args()
    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    if not torch.cuda.is_available():
        sys.exit("verify_calibration.py: CUDA is not available")
    out = {}
    for name, (cls_name, fields, theta) in WIDTHS.items():
        cls = getattr(transformers, cls_name)
        try:
            cfg = cls(num_hidden_layers=args.layers, rope_parameters=dict(rope_type="default", rope_theta=theta), **fields)
        except TypeError:
            cfg = cls(num_hidden_layers=args.layers, rope_theta=theta, **fields)
        torch.manual_seed(args.seed)
        with torch.device("cuda"):
            fp32 = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32, attn_implementation=args.attn)
        fp32.eval()
        bf16 = copy.deepcopy(fp32).to(torch.bfloat16).eval()
        g = torch.Generator().manual_seed(args.seed)
        ids = torch.randint(3, int(0.95 * fields["vocab_size"]), (args.batch, args.prompt), generator=g).cuda()
        with torch.no_grad():
            gen = bf16.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                max_new_tokens=args.new, min_new_tokens=args.new, eos_token_id=None, pad_token_id=0)
            new = gen[:, args.prompt:]                                          # [B, N]
            logits = fp32(input_ids=gen[:, :-1]).logits[:, args.prompt - 1:]    # [B, N, V] float32
            top, arg = logits.max(-1)
            low = logits.min(-1).values
            tok = logits.gather(-1, new.unsqueeze(-1)).squeeze(-1)
            gap = ((top - tok) / (top - low)).flatten().float()
        out[name] = dict(layers=args.layers, positions=int(gap.numel()), worst_gap=float(gap.max()),
                         p99_gap=float(gap.quantile(0.99)), argmax_equal=int((arg == new).sum()))
        print(f"{name} ({args.layers} layers, bf16 vs fp32, {gap.numel()} positions): worst gap "
              f"{100 * out[name]['worst_gap']:.2f} % of the logit range, p99 {100 * out[name]['p99_gap']:.2f} %, "
              f"argmax equal {out[name]['argmax_equal']}/{gap.numel()}", flush=True)
        del fp32, bf16
        torch.cuda.empty_cache()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
