#!/usr/bin/env python3
"""Trains the tiny preset's tokenizer: a byte-level BPE of exactly 512 tokens, Python standard library only.

ids 0-2 are <|pad|>, <|begin_of_text|> (BOS, the tiny model's bos_token_id 1) and <|end_of_text|> (EOS, 2);
then the 256 byte tokens (GPT-2's byte-to-character table, in byte order); then merges up to 512 tokens.
Pre-tokenization and pipeline are Llama 3's (Split regex + ByteLevel); the post-processor adds BOS.
Training text: TEXT below plus tests/data/tokenizer/corpus.json. Deterministic: same inputs, same file.
Usage: python3 scripts/train_tiny_tokenizer.py [OUTDIR]   (default assets/tiny)
"""
import collections
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VOCAB_SIZE = 512
SPECIALS = ["<|pad|>", "<|begin_of_text|>", "<|end_of_text|>"]
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# Python's re has no \p{L}: an equivalent-enough split for counting words during training.
TRAIN_SPLIT = re.compile(r"'(?i:s|t|re|ve|m|ll|d)|[^\r\n\w]?[^\W\d_]+|\d{1,3}| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

TEXT = """\
llmbench measures the latency of large language model inference: the time to first token, the time per
output token, the inter-token latency and the end-to-end time of a request. A benchmark that people trust
says exactly what it measured, on which machine, with which software, and how much the numbers vary from
one run to the next. The tokenizer turns the prompt into token ids before the model sees it, and turns
the generated ids back into text; both steps are part of what a user waits for.

The model reads the prompt in one forward pass called prefill, then generates one token at a time in the
decode loop. Each step attends to the keys and values of every earlier token, kept in the KV cache. The
first token arrives after tokenization, the cache reset, the prefill and the first sampling step; the
following tokens arrive at the pace of the decode loop. Memory bandwidth, not arithmetic, limits decoding
for small batches, so the speed of reading the weights and the cache sets the time per token.

We report the median of many timed runs after a few warm-up runs, with percentiles and a confidence
interval, and we trim the extremes. The results are written as JSON, CSV and Markdown, and a gate compares
a new result with a baseline: if the change is larger than the noise, the gate fails and says why.

def generate(model, tokenizer, prompt, max_new_tokens=32):
    ids = tokenizer.encode(prompt)
    for step in range(max_new_tokens):
        logits = model.forward(ids)
        next_id = int(logits[-1].argmax())
        ids.append(next_id)
    return tokenizer.decode(ids)

for (int i = 0; i < n; ++i) { sum += values[i] * weights[i]; }
The quick brown fox jumps over the lazy dog. It's 2024 and we'll test 128 tokens, 1024 tokens and 4096.
Hello, world! Don't stop; we're nearly there. They've said it's fine, I'm sure you'd agree.
"""


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def train(text):
    byte_char = bytes_to_unicode()
    vocab = {s: i for i, s in enumerate(SPECIALS)}
    token_of = {}  # id → token string
    for b in range(256):
        vocab[byte_char[b]] = len(vocab)
    for s, i in vocab.items():
        token_of[i] = s
    words = collections.Counter(tuple(vocab[byte_char[b]] for b in w.encode("utf-8"))
                                for w in TRAIN_SPLIT.findall(text))
    words = {w: c for w, c in words.items() if w}
    merges = []
    while len(vocab) < VOCAB_SIZE:
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            sys.exit("training text too small to reach 512 tokens")
        # Most frequent pair; ties go to the smallest ids, so the result is deterministic.
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        merged = token_of[a] + token_of[b]
        if merged not in vocab:
            vocab[merged] = len(vocab)
            token_of[vocab[merged]] = merged
        new_id = vocab[merged]
        merges.append([token_of[a], token_of[b]])
        out = {}
        for w, c in words.items():
            nw, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    nw.append(new_id)
                    i += 2
                else:
                    nw.append(w[i])
                    i += 1
            out[tuple(nw)] = out.get(tuple(nw), 0) + c
        words = out
    return vocab, merges


def tokenizer_json(vocab, merges):
    bos = SPECIALS[1]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, s in enumerate(SPECIALS)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [1], "tokens": [bos]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "assets" / "tiny"
    corpus = json.load(open(ROOT / "tests" / "data" / "tokenizer" / "corpus.json", encoding="utf-8"))
    vocab, merges = train(TEXT + "\n".join(corpus))
    assert len(vocab) == VOCAB_SIZE and sorted(vocab.values()) == list(range(VOCAB_SIZE))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges), f, ensure_ascii=False, indent=1)
        f.write("\n")
    config = {"bos_token": SPECIALS[1], "eos_token": SPECIALS[2], "pad_token": SPECIALS[0], "add_bos_token": True,
              "add_eos_token": False, "model_max_length": 2048, "tokenizer_class": "PreTrainedTokenizerFast"}
    with open(out / "tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{out}: {len(vocab)} tokens, {len(merges)} merges")


if __name__ == "__main__":
    main()
