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

# ---- response bodies for the load client (fuzz_load_sse): OpenAI-style streams of completions and chat
# (LF, CRLF and CR line ends, a byte order mark, comments and ping events), a reasoning stream, the error
# shapes of each server family, a whole non-streamed response, a Server-Timing header, and near misses.
def sse(events, eol="\n"):
    return "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}{eol}{eol}" for e in events)


def cmpl(text, finish=None, usage=None):
    return {"id": "cmpl-1", "object": "text_completion", "model": "m",
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}], "usage": usage}


def delta(d, finish=None, usage=None):
    e = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}
    if usage is not None:
        e["usage"] = usage
    return e


usage = {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}
put("load_sse", "completions", sse([cmpl(" Hello"), cmpl(","), cmpl(" world"), cmpl("", "length"),
                                    {"choices": [], "usage": usage}, "[DONE]"]))
put("load_sse", "chat_crlf", sse([delta({"role": "assistant", "content": ""}), delta({"content": "Hi"}),
                                  delta({"content": " there"}), delta({}, "stop", usage), "[DONE]"], "\r\n"))
put("load_sse", "bom_comments_cr", "\ufeff: keep-alive\r\revent: ping\rdata: {}\r\r"
    + sse([cmpl("a"), cmpl("b", usage={"prompt_tokens": 1, "completion_tokens": 2.0})], "\r") + "data: [DONE] \r\r")
put("load_sse", "reasoning", sse([delta({"role": "assistant"}), delta({"reasoning_content": "Hmm", "content": None}),
                                  delta({"reasoning": "ok", "reasoning_content": "ok", "content": ""}),
                                  delta({"content": "42"}), "[DONE]"]))
put("load_sse", "multiline_id_retry", "id: 1\nretry: 100\ndata: {\"choices\": [{\"text\":\ndata: \"x\"}]}\n\n"
    "event: message\ndata: {\"choices\": [{\"text\": \"y\"}], \"llmbench_timing\": {\"queue\": 1.5, \"bad name\": 2, "
    "\"prefill\": -1}}\n\ndata: [DONE]\n\n")
put("load_sse", "llamacpp_error", sse([cmpl("a")]) + 'error: {"code": 500, "message": "context\\nfull", "type": "server_error"}\n\n')
put("load_sse", "tgi_error_event", 'event: error\ndata: {"error": "Input validation error", "error_type": "validation"}\n\n')
put("load_sse", "error_objects", sse([{"error": {"message": "bad\trequest", "code": 400}}, {"object": "error", "message": "vLLM"},
                                      {"detail": [{"loc": ["body"], "msg": "field required"}]}]))
put("load_sse", "whole_chat", json.dumps({"id": "c", "object": "chat.completion", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "Hello!", "reasoning_content": "think"}, "finish_reason": "stop"}],
    "usage": usage}))
put("load_sse", "server_timing", "queue;dur=1.5, prefill;dur=3.2;desc=x, decode;dur=1e3, bad;dur=inf, x y;dur=1")
put("load_sse", "bad_usage_and_data", sse([{"choices": [{"text": "a"}], "usage": {"prompt_tokens": -1, "completion_tokens": 1e30}},
                                           {"choices": "x", "usage": {"completion_tokens": "3"}}, "{not json", "[DONE]"]))
put("load_sse", "unterminated", b"data: {\"choices\": [{\"text\": \"a\"}]}\n\ndata: {\"choi")
put("load_sse", "text_error_body", b"  \r\n502 Bad \xff\xc0\x80 Gateway\x1b[0m\r\nnginx\r\n")
# Kept a byte sequence of UTF-8's shape that is not UTF-8 (F6: above U+10FFFF) in the error message (found by fuzz_load_sse).
put("load_sse", "message_not_utf8", b'!\x00\x00\x00t:\xa5 error\xf6\x9b\x9e\x8ca: validation"}\n\n')

# ---- dataset files for the load generator (fuzz_load_dataset): ShareGPT JSON and JSON lines, valid and near misses.
put("load_dataset", "sharegpt.json", json.dumps([
    {"id": "a", "conversations": [{"from": "human", "value": "What is 2+2?"}, {"from": "gpt", "value": "4, of course."}]},
    {"id": "b", "conversations": [{"from": "human", "value": "Hi"}]},
    {"id": "c", "conversations": [{"from": "human", "value": ""}, {"from": "gpt", "value": "x"}]},
    {"id": "d", "conversations": [{"from": "human", "value": "Tell me more"}, {"from": "gpt", "value": ""}]},
    {"id": "e", "conversations": [{"from": "human", "value": 1}, {"from": "gpt", "value": "y"}]},
    {"conversations": "none"}, 7]))
put("load_dataset", "sharegpt_not_array.json", '{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]}')
put("load_dataset", "prompts.jsonl", '{"prompt": "Write a haiku.", "output_len": 32}\n\n  \r\n'
    '{"prompt": "caf\\u00e9 \\ud83d\\ude00", "output_len": 1}\r\n{"prompt": "last", "output_len": 16777216}')
put("load_dataset", "jsonl_bad_len.jsonl", '{"prompt": "a", "output_len": 0}\n{"prompt": "b", "output_len": 2.5}\n')
put("load_dataset", "jsonl_bad_utf8.jsonl", b'{"prompt": "ok", "output_len": 3}\n{"prompt": "caf\xc3", "output_len": 3}\n')
put("load_dataset", "jsonl_no_prompt.jsonl", '{"text": "a", "output_len": 3}\n[1, 2]\n{"prompt": ""}\n')

# ---- tokenizer_config.json and chat messages (fuzz_chat_template): each family's config, HF's named-template
# list, special tokens as {"content": ...}, and near misses; some followed by NUL, a flags byte (1: the chat
# markers are special tokens, 2: add_generation_prompt) and NUL-separated role/content pairs.
def chat_input(config, flags=None, messages=()):
    out = json.dumps(config).encode()
    if flags is not None:
        out += b"\0" + bytes([flags]) + b"\0".join(x.encode() if isinstance(x, str) else x for m in messages for x in m)
    return out


msgs = [("system", "You are terse."), ("user", "  Hi!\n"), ("assistant", "Hello."), ("user", "Bye")]
llama3 = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "add_bos_token": True,
          "chat_template": "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
                           "{{ m['content'] | trim }}<|eot_id|>{% endfor %}"}
put("chat_template", "llama3.json", chat_input(llama3))
put("chat_template", "llama3_messages", chat_input(llama3, 2, msgs))
put("chat_template", "chatml_named.json", chat_input({"eos_token": {"content": "<|im_end|>", "special": True},
    "chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template": "{{'<|im_start|>' + role}}"}]}, 3, msgs))
put("chat_template", "deepseek_markers", chat_input({"bos_token": {"content": "<\uff5cbegin\u2581of\u2581sentence\uff5c>"},
    "add_eos_token": False, "chat_template": "{{'<\uff5cUser\uff5c>' + message['content']}}"}, 3, msgs))
put("chat_template", "no_template_markers", chat_input({"bos_token": "<|begin_of_text|>", "chat_template": None}, 1,
                                                       [("user", "caf\u00e9"), ("tool", "x")]))
put("chat_template", "unknown_bos", chat_input({"bos_token": "<|nope|>", "chat_template": "<|start_header_id|>"}, 2, [("user", "a")]))
put("chat_template", "wrong_types.json", '{"bos_token": 1, "eos_token": {"content": 2}, "add_bos_token": "yes", "chat_template": 3}')
put("chat_template", "bad_utf8_content", chat_input({"chat_template": "<|im_start|>"}, 0, [("user", b"\xff\xfe")]))

# ---- responses for the load client's HTTP layer (fuzz_load_http): a flags byte (1 stream, 2 count with the tiny
# tokenizer, 8 the server closes after each response, 0xF0 it holds the connection open and a 5 ms deadline ends the
# request), the server's write size (0: all at once), then the raw
# response bytes, two of them split by "|NEXT|" for a second request on the kept-alive connection.
def http(status, body, headers=(), chunked=None, reason=None):
    body = body.encode() if isinstance(body, str) else body
    head = f"HTTP/1.1 {status} {reason or {100: 'Continue', 200: 'OK', 503: 'Service Unavailable'}.get(status, 'X')}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers)
    if chunked:
        out = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + chunked]), body[i:i + chunked]) for i in range(0, len(body), chunked))
        return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + out + b"0\r\n\r\n"
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def load_http(flags, chunk, *responses):
    return bytes([flags, chunk]) + b"|NEXT|".join(responses)


sse_headers = [("Content-Type", "text/event-stream")]
stream = sse([cmpl(" Hello"), cmpl(","), cmpl(" world"), cmpl("", "length"), "[DONE]"])
stream_usage = sse([cmpl(" Hello"), cmpl(" world"), {"choices": [], "usage": usage}, "[DONE]"])
whole = json.dumps({"id": "c", "object": "text_completion", "choices": [{"index": 0, "text": "Hello there", "finish_reason": "length"}],
                    "usage": usage})
put("load_http", "stream_content_length", load_http(1, 0, http(200, stream, sse_headers)))
put("load_http", "stream_chunked", load_http(3, 7, http(200, stream, sse_headers, chunked=40)))
put("load_http", "whole_json", load_http(2, 0, http(200, whole, [("Content-Type", "application/json"),
                                                                   ("Server-Timing", "queue;dur=1.5, prefill;dur=3")])))
put("load_http", "continue_then_200", load_http(1, 13, b"HTTP/1.1 100 Continue\r\n\r\n" + http(200, stream, sse_headers)))
put("load_http", "503_json_error", load_http(1, 0, http(503, json.dumps({"error": {"message": "server overloaded\nretry", "code": 503}}),
                                                        [("Content-Type", "application/json")])))
put("load_http", "gzip", load_http(1, 0, http(200, b"\x1f\x8b\x08\x00" + b"\0" * 12, sse_headers + [("Content-Encoding", "gzip")])))
put("load_http", "no_done", load_http(3, 0, http(200, sse([cmpl("a"), cmpl("b")]), sse_headers, chunked=16)))
put("load_http", "sse_error_event", load_http(1, 5, http(200, sse([cmpl("a")]) + 'error: {"code": 500, "message": "context full"}\n\n',
                                                         sse_headers, chunked=30)))
put("load_http", "usage", load_http(3, 0, http(200, stream_usage, sse_headers)))
put("load_http", "keep_alive_twice", load_http(1, 0, http(200, stream, sse_headers), http(200, stream_usage, sse_headers, chunked=50)))
put("load_http", "keep_alive_closed", load_http(8, 0, http(200, whole), http(200, whole)))
put("load_http", "connection_close_whole", load_http(0, 0, http(200, whole, [("Connection", "close")]), http(200, whole)))
put("load_http", "content_length_short", load_http(1, 0, b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n" + stream.encode()))
put("load_http", "http10_until_eof", load_http(1, 3, b"HTTP/1.0 200 OK\r\n\r\n" + stream.encode()))
put("load_http", "hold_mid_stream", load_http(0xF1, 0, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\ndata: {\"choices\""))
put("load_http", "hold_error_body", load_http(0xF0, 0, b"HTTP/1.1 500 X\r\nContent-Length: 100\r\n\r\n{\"error\": \"over"))
put("load_http", "stray_bytes_after", load_http(1, 0, http(200, stream, sse_headers) + b"HTTP/1.1 200 OK\r\n", http(200, stream)))
