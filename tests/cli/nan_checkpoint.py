"""Copies a safetensors checkpoint directory and fills its model.norm.weight with bf16 NaNs: a model whose
every logit is NaN (verification and the quality check fail on it). Usage: nan_checkpoint.py SRC DST"""
import json, os, shutil, struct, sys

shutil.copytree(sys.argv[1], sys.argv[2])
f = os.path.join(sys.argv[2], "model.safetensors")
b = bytearray(open(f, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
a, e = json.loads(b[8:8 + n])["model.norm.weight"]["data_offsets"]
b[8 + n + a:8 + n + e] = struct.pack("<H", 0x7FC0) * ((e - a) // 2)  # bf16 NaN
open(f, "wb").write(bytes(b))
