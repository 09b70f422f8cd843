#!/usr/bin/env python3
"""Prompts of mixed lengths for `llmbench load --dataset jsonl:FILE` (one {"prompt", "output_len"} per line):
N prompts of a uniformly drawn number of words in [MIN_WORDS, MAX_WORDS] (common English words, so about one
token each), each asking for OUTPUT_LEN tokens. A server then meets a new prompt length, batch shape and
chunk length nearly every pass, as it does with real traffic (docs/serving.md, 2026-12-03).
Usage: python3 scripts/bench/mixed_prompts.py N MIN_WORDS MAX_WORDS OUTPUT_LEN [SEED] > prompts.jsonl
"""
import json, random, sys

WORDS = ("the of and to in is it that for on with as was at by be this from or have an they which one you "
         "all were her she there would their we him been has when who will more no if out so said what up its "
         "about into than them can only other new some could time these two may then do first any my now such "
         "like our over man me even most made after also did many before must through back years where much "
         "your way well down should because each just those people how too little state good very make world "
         "still own see men work long get here between both life being under never day same another know while "
         "last might us great old year off come since against go came right used take three").split()

if len(sys.argv) not in (5, 6):
    sys.exit(__doc__.strip().splitlines()[-1])
n, lo, hi, out_len = (int(x) for x in sys.argv[1:5])
if n < 1 or lo < 1 or hi < lo or out_len < 1:
    sys.exit("mixed_prompts.py: need N >= 1, 1 <= MIN_WORDS <= MAX_WORDS, OUTPUT_LEN >= 1")
rng = random.Random(int(sys.argv[5]) if len(sys.argv) == 6 else 0)
for _ in range(n):
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    print(json.dumps({"prompt": " ".join(words), "output_len": out_len}))
