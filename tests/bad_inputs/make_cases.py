#!/usr/bin/env python3
"""Writes the damaged inputs of the bad-input suite into OUT, from the committed fixtures (stdlib only).

Usage: make_cases.py OUT ROOT   (ROOT: the repository root; reads tests/data/models, assets/tiny, tests/data/gate)
Each checkpoint case is a directory OUT/<name>/ holding a copy of a fixture with one thing broken.
"""
import json
import os
import shutil
import struct
import sys

out, root = sys.argv[1], sys.argv[2]
models = os.path.join(root, "tests", "data", "models")


def read_st(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]


def write_st(path, header, data, header_bytes=None):
    h = header_bytes if header_bytes is not None else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def copy_fixture(name, fixture="llama_bf16"):
    d = os.path.join(out, name)
    shutil.copytree(os.path.join(models, fixture), d)
    os.remove(os.path.join(d, "reference.json"))
    return d


def st_case(name, damage, fixture="llama_bf16", shard="model.safetensors"):
    """damage(header, data) -> (header, data[, raw header bytes])"""
    d = copy_fixture(name, fixture)
    p = os.path.join(d, shard)
    header, data = read_st(p)
    r = damage(header, data)
    write_st(p, *r)


def config_case(name, edit, fixture="llama_bf16"):
    d = copy_fixture(name, fixture)
    p = os.path.join(d, "config.json")
    c = json.load(open(p))
    edit(c)
    json.dump(c, open(p, "w"), indent=1)


def raw_file(name, content):
    with open(os.path.join(out, name), "wb") as f:
        f.write(content)


# ---- safetensors
def header_beyond(h, d):
    raw = json.dumps(h).encode()
    return h, d, raw


st_case("st_header_beyond", lambda h, d: (h, d))
p = os.path.join(out, "st_header_beyond", "model.safetensors")
b = bytearray(open(p, "rb").read())
b[:8] = struct.pack("<Q", len(b) + 1000)  # header length past the end of the file
open(p, "wb").write(bytes(b))

st_case("st_garbage_json", lambda h, d: (h, d, b"{\"lm_head.weight\": {\"dtype\": \"BF16\", \x00garbage"))
st_case("st_header_not_object", lambda h, d: (h, d, b"[1, 2, 3]"))


def set_field(tensor, key, value):
    def damage(h, d):
        h[tensor][key] = value
        return h, d
    return damage


st_case("st_unknown_dtype", set_field("model.layers.1.mlp.up_proj.weight", "dtype", "Q4_K"))
st_case("st_missing_dtype", lambda h, d: (h.__setitem__("model.norm.weight", {"shape": [64], "data_offsets": [224768, 224896]}) or (h, d)))
st_case("st_offsets_out_of_range", set_field("model.norm.weight", "data_offsets", [224768, 10 ** 9]))
st_case("st_offsets_negative", set_field("model.norm.weight", "data_offsets", [-128, 0]))
st_case("st_offsets_reversed", set_field("model.norm.weight", "data_offsets", [224896, 224768]))
# k_proj moved onto o_proj's bytes: same size, overlapping ranges.
st_case("st_overlap", set_field("model.layers.0.self_attn.k_proj.weight", "data_offsets", [130304, 134400]))
st_case("st_span_vs_shape", set_field("model.layers.0.input_layernorm.weight", "shape", [65]))
st_case("st_shape_not_sizes", set_field("model.layers.0.input_layernorm.weight", "shape", [-64]))
st_case("st_shape_overflow", set_field("model.layers.0.input_layernorm.weight", "shape", [2 ** 62, 2 ** 62]))
# The data buffer cut short: the last tensor's bytes are not all there.
st_case("st_data_short", lambda h, d: (h, d[:-100]))
# Bytes after the last tensor (the reference library's MetadataIncompleteBuffer).
st_case("st_trailing_bytes", lambda h, d: (h, d + b"garbage"))
st_case("st_missing_tensor", lambda h, d: (h.pop("model.layers.1.self_attn.v_proj.weight") and (h, d)))
# A consistent file whose tensor has the wrong shape for config.json.
def wrong_shape(h, d):
    h["model.layers.0.self_attn.q_proj.weight"]["shape"] = [32, 128]
    return h, d
st_case("st_wrong_shape", wrong_shape)
# A well-formed file whose final norm is NaN (bf16 0x7fc0): every logit is NaN, which compares false with
# everything; verification and the quality figures must refuse it, not call it a perfect match.
def nan_norm(h, d):
    s, e = h["model.norm.weight"]["data_offsets"]
    return h, d[:s] + b"\xc0\x7f" * ((e - s) // 2) + d[e:]
st_case("st_nan_norm", nan_norm)
st_case("st_nan_norm_int8", nan_norm)
# A link to nowhere (a partial download): an error naming the file, not a model with random weights.
os.makedirs(os.path.join(out, "st_dangling_link"))
shutil.copy(os.path.join(models, "llama_bf16", "config.json"), os.path.join(out, "st_dangling_link"))
os.symlink("blobs/0123abcd", os.path.join(out, "st_dangling_link", "model.safetensors"))
os.makedirs(os.path.join(out, "st_is_directory", "model.safetensors"))
shutil.copy(os.path.join(models, "llama_bf16", "config.json"), os.path.join(out, "st_is_directory"))
os.makedirs(os.path.join(out, "st_tiny_file"))
shutil.copy(os.path.join(models, "llama_bf16", "config.json"), os.path.join(out, "st_tiny_file"))
raw_file("st_tiny_file/model.safetensors", b"\x05\x00\x00")
os.makedirs(os.path.join(out, "st_empty_file"))
shutil.copy(os.path.join(models, "llama_bf16", "config.json"), os.path.join(out, "st_empty_file"))
raw_file("st_empty_file/model.safetensors", b"")

# ---- shards and the index
d = copy_fixture("shard_missing", "llama_sharded")
os.remove(os.path.join(d, "model-00002-of-00002.safetensors"))


def index_case(name, edit):
    d = copy_fixture(name, "llama_sharded")
    p = os.path.join(d, "model.safetensors.index.json")
    j = json.load(open(p))
    r = edit(j)
    if isinstance(r, bytes):
        open(p, "wb").write(r)
    else:
        json.dump(j, open(p, "w"), indent=1)


index_case("index_absent_file", lambda j: j["weight_map"].__setitem__("model.norm.weight", "model-00009-of-00009.safetensors"))
index_case("index_malformed", lambda j: b'{"weight_map": {"lm_head.weight": ')
index_case("index_no_weight_map", lambda j: j.pop("weight_map") and None)
index_case("index_wrong_shard", lambda j: j["weight_map"].__setitem__("lm_head.weight", "model-00001-of-00002.safetensors"))
index_case("index_path_escape", lambda j: j["weight_map"].__setitem__("lm_head.weight", "../llama_bf16/model.safetensors"))

# ---- config.json
config_case("cfg_missing_hidden", lambda c: c.pop("hidden_size"))
config_case("cfg_zero_layers", lambda c: c.__setitem__("num_hidden_layers", 0))
config_case("cfg_heads_not_dividing", lambda c: (c.pop("head_dim"), c.update(num_attention_heads=6, num_key_value_heads=3)))
config_case("cfg_kv_not_dividing", lambda c: c.__setitem__("num_key_value_heads", 3))
config_case("cfg_negative_size", lambda c: c.__setitem__("intermediate_size", -128))
config_case("cfg_huge_float", lambda c: c.__setitem__("vocab_size", 1e300))
config_case("cfg_string_size", lambda c: c.__setitem__("hidden_size", "64"))
config_case("cfg_odd_head_dim", lambda c: c.__setitem__("head_dim", 15))
config_case("cfg_architecture", lambda c: c.__setitem__("architectures", ["GPT2LMHeadModel"]))
config_case("cfg_rope_type", lambda c: c["rope_parameters"].__setitem__("rope_type", "yarn"))
config_case("cfg_rope_disagree", lambda c: c.__setitem__("rope_scaling", {"rope_type": "linear", "factor": 4.0}))
config_case("cfg_rope_theta_disagree", lambda c: c.__setitem__("rope_theta", 5.0))
config_case("cfg_hidden_act", lambda c: c.__setitem__("hidden_act", "gelu"))
config_case("cfg_eps_nan", lambda c: c.__setitem__("rms_norm_eps", -1))
d = copy_fixture("cfg_malformed")
open(os.path.join(d, "config.json"), "w").write('{"architectures": ["LlamaForCausalLM"], "hidden_size": 64,,}')
d = copy_fixture("cfg_absent")
os.remove(os.path.join(d, "config.json"))

# ---- tokenizer.json (from the built-in tiny tokenizer)
tok = json.load(open(os.path.join(root, "assets", "tiny", "tokenizer.json")))


def tok_case(name, edit):
    t = json.loads(json.dumps(tok))
    edit(t)
    os.makedirs(os.path.join(out, name))
    json.dump(t, open(os.path.join(out, name, "tokenizer.json"), "w"))


os.makedirs(os.path.join(out, "tok_malformed"))
raw_file("tok_malformed/tokenizer.json", json.dumps(tok)[:5000].encode())
tok_case("tok_unknown_model", lambda t: t["model"].__setitem__("type", "Unigram2"))
tok_case("tok_unknown_pretokenizer", lambda t: t["pre_tokenizer"]["pretokenizers"][1].__setitem__("type", "Whatever"))
tok_case("tok_unknown_normalizer", lambda t: t.__setitem__("normalizer", {"type": "Frobnicate"}))
tok_case("tok_bad_regex", lambda t: t["pre_tokenizer"]["pretokenizers"][0]["pattern"].__setitem__("Regex", "(unclosed[a-"))
tok_case("tok_merge_unknown", lambda t: t["model"]["merges"].insert(0, "zzqx\u0100 \u0101yy"))
tok_case("tok_vocab_not_object", lambda t: t["model"].__setitem__("vocab", [1, 2, 3]))
tok_case("tok_added_bad_id", lambda t: t["added_tokens"][0].__setitem__("id", "seven"))
tok_case("tok_config_malformed", lambda t: None)
raw_file("tok_config_malformed/tokenizer_config.json", b'{"bos_token": ')
tok_case("tok_config_bad_bos", lambda t: None)
raw_file("tok_config_bad_bos/tokenizer_config.json", b'{"bos_token": 5}')

# ---- text files
raw_file("bad_utf8.txt", b"The quick \xc3\x28 brown \xff fox")
raw_file("empty.txt", b"")

# ---- YAML compare configs
yaml = {
    "yaml_syntax": "defaults:\n  device: cpu\nmodels:\n  - model: tiny\n    label: [unclosed\n",
    "yaml_unknown_key": "defaults:\n  device: cpu\n  warmpu: 2\nmodels:\n  - model: tiny\n",
    "yaml_wrong_type": "defaults:\n  device: cpu\n  runs: many\nmodels:\n  - model: tiny\n",
    "yaml_wrong_shape": "defaults: [1, 2]\nmodels:\n  - model: tiny\n",
    "yaml_no_models": "defaults:\n  device: cpu\nmodels: []\n",
    "yaml_baseline": "models:\n  - model: tiny\n    label: a\nbaseline: b\n",
    "yaml_duplicate": "models:\n  - model: tiny\n    label: a\n  - model: tiny\n    label: a\n",
    "yaml_bad_batch": "matrix:\n  batch: [1, 0]\nmodels:\n  - model: tiny\n",
    "yaml_tabs": "models:\n\t- model: tiny\n",
    "yaml_prompt_file_absent": "defaults:\n  device: cpu\nmodels:\n  - model: tiny\n    prompt_file: absent-prompt.txt\n",
    "yaml_batch_twice": "matrix:\n  batch: [1, 1]\nmodels:\n  - model: tiny\n",
    "yaml_two_documents": "models:\n  - model: tiny\n---\nmodels:\n  - model: other\n",
}
for name, text in yaml.items():
    raw_file(name + ".yaml", text.encode())
raw_file("yaml_binary.yaml", b"\xff\xfe\x00models: \x00\x01")

# ---- results JSON
base = json.load(open(os.path.join(root, "tests", "data", "gate", "baseline.json")))


def results_case(name, edit):
    r = json.loads(json.dumps(base))
    edit(r)
    raw_file(name, json.dumps(r).encode())


results_case("res_schema9.json", lambda r: r.__setitem__("schema_version", 9))
results_case("res_no_schema.json", lambda r: r.pop("schema_version"))
results_case("res_points_object.json", lambda r: r.__setitem__("points", {"a": 1}))
results_case("res_point_no_params.json", lambda r: r["points"][0].pop("params"))
results_case("res_runs_string.json", lambda r: r["points"][0].__setitem__("runs", "fast"))
raw_file("res_truncated.json", json.dumps(base).encode()[:700])
raw_file("res_not_json.json", b"\x89PNG\r\n\x1a\n not json at all")
raw_file("gate_verdict_bad.json", b"{\"verdicts\": [")
raw_file("gate_verdict_deep.json", b"{\"a\":" + b"[" * 100000 + b"]" * 100000 + b"}")
raw_file("res_1e400.json", json.dumps(base).replace('"trim": ', '"trim": 1e400, "x": ', 1).encode())
raw_file("gate_config_bad.yaml", b"metrics:\n  ttft_ms: {max_regress: lots}\n")
