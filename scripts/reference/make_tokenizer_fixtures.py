#!/usr/bin/env python3
"""Reference token ids for llmbench's tokenizer tests, from HF `tokenizers` (an independent implementation).

Usage: python3 scripts/reference/make_tokenizer_fixtures.py TOKDIR CORPUS OUTDIR
  TOKDIR  folder with llama3/, qwen3/, llama2/ (scripts/fetch-tokenizers.sh fills .cache/tokenizers)
  CORPUS  tests/data/tokenizer/corpus.json (a JSON list of strings)
  OUTDIR  where <name>.json and hf_throughput.json are written (copy them to tests/data/tokenizer/reference/)
The tiny preset's tokenizer (assets/tiny/ next to this script's repository) is included when present.
Needs python3 with tokenizers (and optionally transformers, sentencepiece); no network.
"""
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import tokenizers  # noqa: E402

CHAT_MESSAGES = [{"role": "user", "content": "Hello, how are you?"}]


def bench_text(corpus, size=1 << 20):
    """≥ size bytes of mixed text; src/tokenizer/bench_text.cpp generates the same bytes."""
    x = 0x853C49E6748FEA9B
    mask = (1 << 64) - 1

    def rnd(n):
        nonlocal x
        x = (x * 6364136223846793005 + 1442695040888963407) & mask
        return (x >> 33) % n

    syll = ["ka", "lo", "mi", "ter", "an", "the", "ing", "ion", "str", "pre", "qu", "zz", "The", "An",
            "é", "ü", "中", "文", "語", "ß", "ph", "ou", "😀", "Ω"]
    punct = [", ", ". ", "!\n", "\n\n", "; ", " (", ") ", "\t", "'s ", "\r\n", "? ", "    "]
    out = []
    n = 0
    while n < size:
        k = rnd(10)
        if k < 2:
            piece = corpus[rnd(len(corpus))] + " "
        elif k < 8:
            piece = "".join(syll[rnd(len(syll))] for _ in range(1 + rnd(4))) + " "
        elif k == 8:
            piece = "".join(str(rnd(10)) for _ in range(1 + rnd(8))) + " "
        else:
            piece = punct[rnd(len(punct))]
        out.append(piece)
        n += len(piece.encode("utf-8"))
    return "".join(out)


def tokenizer_dirs(tokdir):
    dirs = {name: Path(tokdir) / name for name in ("llama3", "qwen3", "llama2")}
    tiny = Path(__file__).resolve().parents[2] / "assets" / "tiny"
    if (tiny / "tokenizer.json").exists():
        dirs["tiny"] = tiny
    return dirs


def transformers_side(path):
    """Chat prompt and ids from transformers' AutoTokenizer (for the chat-format tests), if importable."""
    try:
        import transformers
        tok = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as e:  # transformers missing or the folder unsupported: leave it out
        return {"error": repr(e)}
    out = {"version": transformers.__version__}
    if getattr(tok, "chat_template", None):
        try:
            out["chat_prompt"] = tok.apply_chat_template(CHAT_MESSAGES, tokenize=False, add_generation_prompt=True)
            out["chat_messages"] = CHAT_MESSAGES
        except Exception as e:
            out["chat_error"] = repr(e)
    return out


def sentencepiece_ids(path, corpus):
    model = path / "tokenizer.model"
    if not model.exists():
        return None
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=str(model))
    return [sp.encode(t) for t in corpus]


def fixtures(name, path, corpus):
    tok = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
    cases = []
    for text in corpus:
        with_special = tok.encode(text, add_special_tokens=True).ids
        plain = tok.encode(text, add_special_tokens=False).ids
        cases.append({
            "text": text,
            "ids": with_special,
            "ids_no_special": plain,
            "decoded": tok.decode(plain, skip_special_tokens=False),
            "decoded_special": tok.decode(with_special, skip_special_tokens=False),
            "decoded_skip_special": tok.decode(with_special, skip_special_tokens=True),
        })
    out = {"tokenizer": name, "tokenizers_version": tokenizers.__version__,
           "vocab_size": tok.get_vocab_size(with_added_tokens=True), "cases": cases,
           "transformers": transformers_side(path)}
    try:
        sp = sentencepiece_ids(path, corpus)
        if sp is not None:
            out["sentencepiece_ids"] = sp
    except Exception as e:
        out["sentencepiece_error"] = repr(e)
    return out


def throughput(name, path, text, repeats=5):
    """Best of `repeats`, one thread: one encode() of the whole text, and encode() per line."""
    tok = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
    size = len(text.encode("utf-8"))
    lines = text.split("\n")
    result = {"bytes": size}
    for mode, fn in (("whole", lambda: tok.encode(text, add_special_tokens=False)),
                     ("lines", lambda: [tok.encode(l, add_special_tokens=False) for l in lines])):
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        result[f"{mode}_mb_s"] = size / best / 1e6
    result["tokens"] = len(tok.encode(text, add_special_tokens=False).ids)
    print(f"{name:7s} {size} bytes, {result['tokens']} tokens: whole {result['whole_mb_s']:.2f} MB/s, "
          f"per line {result['lines_mb_s']:.2f} MB/s (one thread)")
    return result


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tokdir, corpus_path, outdir = sys.argv[1:]
    corpus = json.load(open(corpus_path, encoding="utf-8"))
    os.makedirs(outdir, exist_ok=True)
    text = bench_text(corpus)
    perf = {"tokenizers_version": tokenizers.__version__, "cpu": platform.processor() or platform.machine(),
            "python": platform.python_version(), "threads": 1, "bench_text_bytes": len(text.encode("utf-8")),
            "results": {}}
    try:
        perf["cpu"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except Exception:
        pass
    for name, path in tokenizer_dirs(tokdir).items():
        if not (path / "tokenizer.json").exists():
            print(f"missing {path}/tokenizer.json, skipped", file=sys.stderr)
            continue
        with open(Path(outdir) / f"{name}.json", "w", encoding="utf-8") as f:
            json.dump(fixtures(name, path, corpus), f, ensure_ascii=False, indent=0)
        perf["results"][name] = throughput(name, path, text)
    with open(Path(outdir) / "hf_throughput.json", "w") as f:
        json.dump(perf, f, indent=2)


if __name__ == "__main__":
    main()
