#!/usr/bin/env python3
"""Reference ids for the sentencepiece path, from the `sentencepiece` Python package (independent of libsentencepiece's C++ API use in llmbench).

Usage: python3 scripts/reference/make_spm_fixtures.py MODEL CORPUS OUT
  MODEL  tests/data/tokenizer/spm/tiny_spm.model (trained here with Debian's spm_train, see its README)
  CORPUS tests/data/tokenizer/corpus.json
  OUT    tests/data/tokenizer/reference/tiny_spm.json
"""
import json
import sys

import sentencepiece as spm

model, corpus, out = sys.argv[1:4]
sp = spm.SentencePieceProcessor(model_file=model)
texts = json.load(open(corpus, encoding="utf-8"))
cases = [{"text": t, "ids": sp.encode(t), "decoded": sp.decode(sp.encode(t))} for t in texts]
json.dump({"sentencepiece_version": spm.__version__, "vocab_size": sp.get_piece_size(),
           "bos_id": sp.bos_id(), "eos_id": sp.eos_id(), "cases": cases},
          open(out, "w", encoding="utf-8"), ensure_ascii=False, indent=1)
print(f"{len(cases)} cases, vocab {sp.get_piece_size()} -> {out}")
