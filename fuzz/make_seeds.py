#!/usr/bin/env python3
"""Writes the committed seed corpora under fuzz/corpus/ (stdlib only; rerun to regenerate).
Usage: python3 fuzz/make_seeds.py"""
import json
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
corpus = os.path.join(here, "corpus")


def put(target, name, content):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(content if isinstance(content, bytes) else content.encode())


# ---- safetensors: small valid files of each dtype, metadata, empty tensors, and a few near misses.
def st(tensors, metadata=None, pad=b""):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data + pad


f32 = struct.pack("<4f", 1, 2, 3, 4)
put("safetensors", "valid_f32", st([("a", "F32", [2, 2], f32), ("b", "F32", [1], f32[:4])], {"format": "pt"}))
put("safetensors", "valid_bf16_f16", st([("w", "BF16", [3], b"\x80\x3f" * 3), ("h", "F16", [2], b"\x00\x3c" * 2)]))
put("safetensors", "empty_tensor", st([("e", "F32", [0, 4], b""), ("s", "F32", [], f32[:4])]))
put("safetensors", "no_tensors", st([]))
put("safetensors", "trailing_bytes", st([("a", "F32", [1], f32[:4])], pad=b"\0" * 8))
put("safetensors", "bad_dtype", st([("a", "I8", [4], b"\1\2\3\4")]))
put("safetensors", "short", b"\x10\x00\x00\x00\x00\x00\x00\x00{}")

# ---- tokenizer.json: the built-in tiny BPE (ByteLevel, Split regex, template), and a Metaspace/byte-fallback
# one, each with and without a text after a NUL byte.
tiny = open(os.path.join(root, "assets", "tiny", "tokenizer.json"), "rb").read()
put("tokenizer", "tiny_bytelevel.json", tiny)
put("tokenizer", "tiny_with_text", tiny + b"\0The cat's 12345 naps.\n\nOK?")
vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "\u2581": 3, "a": 4, "b": 5, "\u2581a": 6, "ab": 7,
         "<0x41>": 8, "<0xC3>": 9, "<0xA9>": 10}
meta = {
    "version": "1.0",
    "added_tokens": [{"id": 1, "content": "<s>", "special": True, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                       {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "pre_tokenizer": None,
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                                {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
                       "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                 {"type": "ByteFallback"}, {"type": "Fuse"},
                                                 {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
              "vocab": vocab, "merges": [["\u2581", "a"], ["a", "b"]]},
}
put("tokenizer", "metaspace_fallback.json", json.dumps(meta))
put("tokenizer", "metaspace_with_text", json.dumps(meta).encode() + b"\0ab a\xc3\xa9 A")

# ---- YAML: every committed compare config, gate-config shapes, and a few typos.
for name in sorted(os.listdir(os.path.join(root, "configs"))):
    if name.endswith(".yaml"):
        put("yaml", name, open(os.path.join(root, "configs", name), "rb").read())
put("yaml", "gate.yaml", "metrics:\n  ttft_ms: 5%\n  peak_memory: 0.02\nmax_cv: 0.1\nallow_missing: true\n")
put("yaml", "typo.yaml", "defaults:\n  warmpu: 1\nmodels:\n  - model: tiny\n")
# An input on which yaml-cpp 0.7's LoadAll looped forever (fuzz_compare_config, session 33).
put("yaml", "loadall_loop.yaml", b"# The seed s|udy: theCthrel: deepseek-r1-7b\n  , model: llama-gs/seed-compigs/seed-comparison.yen"
    b"2.5-6]\n  max_\x8anew_tokens: [51\nbaseline: llama-3-8b\n")
put("yaml", "anchors.yaml", "base: &b {device: cpu, runs: 3, trim: 0}\ndefaults: *b\nmodels:\n  - {model: tiny, label: x}\n")

# ---- request bodies for the server: valid ones of both endpoints and near misses (bytes that are not
# UTF-8 where a parse error quotes them, typographic quotes, wrong types).
put("serve_request", "completion.json", '{"model": "m", "prompt": "Hello", "max_tokens": 8, "stream": true, '
    '"stream_options": {"include_usage": true}, "stop": ["\\n", "END"], "temperature": 0, "seed": 7}')
put("serve_request", "ids.json", '{"prompt": [1, 2, 3], "max_tokens": 4, "ignore_eos": true, "min_tokens": 2}')
put("serve_request", "chat.json", '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", '
    '"content": [{"type": "text", "text": "Hi"}]}], "max_completion_tokens": 16, "top_p": 0.9}')
put("serve_request", "smart_quotes", b'{"prompt": \xe2\x80\x9chello\xe2\x80\x9d, "max_tokens": 4}')
put("serve_request", "not_utf8", b'{"prompt": "a\xff", "stop": ["\xc3"]}')
put("serve_request", "wrong_types", '{"prompt": {"text": 1}, "max_tokens": "ten", "n": 2, "logprobs": 3}')

# ---- results JSON: the gate fixtures (hand-made, small).
gate = os.path.join(root, "tests", "data", "gate")
for name in sorted(os.listdir(gate)):
    if name.endswith(".json"):
        put("results", name, open(os.path.join(gate, name), "rb").read())
