#!/usr/bin/env python3
"""A scripted OpenAI-style streaming server for the load tests (loopback only, stops by itself).

Every completion request streams `tokens` content events (default: the request's max_tokens): the
first TTFT ms after the request arrived, then one every ITL ms (absolute targets, no drift). Request
number i (0-based, in arrival order) can be given a fault: http500, http429, disconnect (cut after 2
events), malformed (a bad event after 1), stall (1 event, then silence for --stall-s), flood (events
back to back forever, no [DONE]), keepalive (1 event, then `: keep-alive` comments back to back
forever), longline (a `data:` line that never ends), huge (a first event of 10 MB), continue (a
`100 Continue` before the response), afterdone (an error event and junk after [DONE]), cr (CR-only
line ends), empty (a 200 without a body), stale (an unasked-for second response 20 ms after the
real one, on the kept-alive connection), errvllm / errdetail (after 2 events, a vLLM `{"object": "error"}`
or FastAPI `{"detail": ...}` event, then [DONE]; errvllm without streaming: a 200 of that object),
errllamacpp / errtgi (after 2 events, llama.cpp's `error: {...}` line or TGI's `event: error`, then the
end of the stream), ping (before every event, sse-starlette's `event: ping` whose data is not JSON), donespace
(`data: [DONE] ` with a space after it), bighdr (a response with 40 KB of headers, as a gateway's cookies
and policies), http400 (OpenAI's JSON error body), http503text (a plain-text body of two lines, delimited by
closing the connection), untilclose (a stream without Content-Length or chunked framing, ended by closing
the connection), http503slow (a 503 whose JSON body stops after its first 37 bytes for --stall-s), gzip (the whole stream gzip-compressed, with Content-Encoding: gzip, unasked). A request with "stream": false gets one JSON response (--empty-text and --no-usage apply) when its last token would have been
sent. With
--empty-text N the first N content events of a request carry "" (tokens that decode to no text); with
--markers the stream also has OpenAI's markers that are no tokens: chat's role announcement at once, a
finish_reason chunk with empty text at the end. With --capacity N at most N requests are served at once
(the others wait, their clock starting when served): a server whose latency grows with load, for
`load --search`. With --reasoning N (chat) the first N events carry a reasoning model's thinking instead
of content. With --tls-cert CERT --tls-key KEY it serves https (TLS 1.2+, Python's ssl module; it closes
connections without TLS's close_notify, as many servers do). GET /stats: the connections accepted, the
streams whose client went away before their end (a write failed: "aborted") and the requests seen so far (how many connections the client opened, kept-alive ones reused), and a log of every
request: its arrival in ms on the server's monotonic clock, its prompt (chat: the last message's content),
max_tokens (a trace replay's schedule, seen from the server), chat's whole messages (a conversation's history)
and the TTFT it served (ms from reading the request line to writing the first token event; null if none was:
what a loaded host made of --ttft-ms, the reference for the client's measured TTFT).
usage.prompt_tokens counts the words of the prompt (chat: of every message); with --prefix-cache,
usage.prompt_tokens_details.cached_tokens is the longest word prefix of it that an earlier request's prompt and
answer began with (--usage-cached: this JSON value instead). GET /metrics: Prometheus text of the streams being
answered (a gauge), the token events sent (a counter) and the TTFTs it served (a histogram, buckets 10 ms to 250 ms). Prints "llmbench serve: listening on
http://127.0.0.1:PORT" (https://) when ready, exactly like `llmbench serve`.
"""
import argparse
import gzip
import json
import os
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--ttft-ms", type=float, default=20)
parser.add_argument("--itl-ms", type=float, default=5)
parser.add_argument("--tokens", type=int, default=0, help="content events per request (0: max_tokens)")
parser.add_argument("--faults", default="", help="INDEX:KIND,... with KIND http500|http429|disconnect|malformed|stall|"
                    "flood|keepalive|longline|huge|continue|afterdone|cr|empty|stale|errvllm|errdetail|errllamacpp|errtgi|ping|donespace|bighdr|http400|http503text|http503slow|untilclose|gzip")
parser.add_argument("--stall-s", type=float, default=3)
parser.add_argument("--no-usage", action="store_true", help="never send a usage chunk")
parser.add_argument("--timing", action="store_true", help="llmbench_timing in the final chunk")
parser.add_argument("--lifetime-s", type=float, default=60, help="exit after this long, whatever happens")
parser.add_argument("--model", default="scripted")
parser.add_argument("--empty-text", type=int, default=0, help="the first N content events carry empty text")
parser.add_argument("--markers", action="store_true", help="chat role chunk first, a finish chunk last")
parser.add_argument("--reasoning", type=int, default=0,
                    help="chat: the first N content events carry reasoning text instead (delta.reasoning_content "
                         "with content null, DeepSeek-R1; every other one delta.reasoning, newer vLLM)")
parser.add_argument("--usage-completion", default=None, help="usage.completion_tokens as this JSON value (e.g. -5, 4.0)")
parser.add_argument("--prefix-cache", action="store_true",
                    help="usage.prompt_tokens_details.cached_tokens: the longest prefix (in words) of the prompt that an "
                         "earlier request's prompt and answer began with, as a prefix cache that keeps both would hold")
parser.add_argument("--usage-cached", default=None, help="usage.prompt_tokens_details.cached_tokens as this JSON value")
parser.add_argument("--models-stall-s", type=float, default=0, help="GET /v1/models answers after this long")
parser.add_argument("--models-continue", action="store_true", help="GET /v1/models: a 100 Continue before the answer")
parser.add_argument("--capacity", type=int, default=0,
                    help="serve at most N requests at once, the others wait in arrival order (0: no limit)")
parser.add_argument("--tls-cert", default="", help="serve https with this PEM certificate (chain)")
parser.add_argument("--tls-key", default="", help="and this PEM private key")
args = parser.parse_args()
slots = threading.Semaphore(args.capacity) if args.capacity > 0 else None

faults = {}
for item in filter(None, args.faults.split(",")):
    index, kind = item.split(":")
    faults[int(index)] = kind
def common_prefix(a, b):
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def usage(prompt, completion, answer):
    """The usage object of a response to `prompt` (words are tokens) with `answer` text."""
    words = prompt.split()
    u = {"prompt_tokens": len(words), "completion_tokens": completion, "total_tokens": len(words) + completion}
    if args.prefix_cache:
        with lock:
            cached = max([common_prefix(words, s) for s in cache_seen] + [0])
            cache_seen.append(words + answer.split())
        u["prompt_tokens_details"] = {"cached_tokens": cached}
    if args.usage_cached is not None:
        u["prompt_tokens_details"] = {"cached_tokens": json.loads(args.usage_cached)}
    return u


TIMING = {"http_recv": 0.5, "queue": 1.0, "tokenize": 0.25, "prefill": 4.0, "decode": 30.0, "stream": 2.0}
lock = threading.Lock()
counter = [0]
connections = [0]
running = [0]  # streamed requests being answered (GET /metrics)
aborted = [0]  # streams whose client closed the connection before the end (a write failed)
tokens_sent = [0]
ttft_observed = []  # seconds from a request's arrival to its first token event
TTFT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25]
cache_seen = []  # --prefix-cache: each earlier request's prompt and answer words
request_log = []  # per request, in arrival order: when (ms on the server's clock), its prompt and max_tokens


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as real servers set it: without it the first event waits for the ACK of the
    # response headers (Nagle), a few ms late whenever the TTFT is shorter than the delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def parse_request(self):  # the request line has just been read: its arrival, as near as Python sees it
        self.arrival = time.monotonic()
        return super().parse_request()

    def setup(self):
        with lock:
            connections[0] += 1
        super().setup()

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self.send_json(200, {"status": "ok"})
        elif self.path == "/stats":
            with lock:
                self.send_json(200, {"connections": connections[0], "requests": counter[0], "aborted": aborted[0],
                                     "log": request_log})
        elif self.path.endswith("/metrics"):  # (or /PREFIX/metrics) Prometheus text: a gauge, an OpenMetrics-style counter, a histogram
            with lock:
                lines = ["# HELP scripted_requests_running Streams being answered", "# TYPE scripted_requests_running gauge",
                         "scripted_requests_running %d" % running[0], "# TYPE scripted_tokens counter",
                         "scripted_tokens_total %d" % tokens_sent[0], "# TYPE scripted_ttft_seconds histogram"]
                for le in TTFT_BUCKETS:
                    lines.append('scripted_ttft_seconds_bucket{le="%g"} %d' % (le, sum(1 for t in ttft_observed if t <= le)))
                lines += ['scripted_ttft_seconds_bucket{le="+Inf"} %d' % len(ttft_observed),
                          "scripted_ttft_seconds_sum %r" % sum(ttft_observed), "scripted_ttft_seconds_count %d" % len(ttft_observed)]
            body = ("\n".join(lines) + "\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/v1/models":
            time.sleep(args.models_stall_s)
            if args.models_continue:
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.send_json(200, {"object": "list", "data": [{"id": args.model, "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def raw_chunk(self, payload):
        if self.fault == "untilclose":  # no chunked framing: the body ends where the connection does
            self.wfile.write(payload)
        else:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        self.wfile.flush()

    def chunk(self, data):
        end = "\r\r" if self.fault == "cr" else "\n\n"
        self.raw_chunk(("data: " + data + end).encode())

    def do_POST(self):
        if slots is None:
            return self.respond()
        with slots:  # --capacity: wait for a free slot; the clock of the response starts then
            return self.respond()

    def respond(self):
        t0 = time.monotonic()
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        chat = self.path.endswith("/chat/completions")
        with lock:
            index = counter[0]
            counter[0] += 1
            prompt = request["messages"][-1]["content"] if chat and request.get("messages") else request.get("prompt")
            entry = {"t_ms": t0 * 1000, "prompt": prompt, "max_tokens": request.get("max_tokens"),
                     "messages": request.get("messages") if chat else None, "ttft_ms": None}
            request_log.append(entry)
        fault = self.fault = faults.get(index)
        if fault in ("http500", "http429"):
            return self.send_json(int(fault[4:]), {"error": {"message": fault}})
        if fault == "http400":
            return self.send_json(400, {"error": {"message": "min_tokens is not supported by this server",
                                                  "type": "invalid_request_error"}})
        if fault == "http503text":
            self.wfile.write(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n"
                             b"  overloaded: \x01try again\r\nTraceback (most recent call last):\r\n")
            self.close_connection = True
            return
        if fault == "http503slow":  # a JSON error body of which only the start comes, then --stall-s of silence
            self.wfile.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100\r\n\r\n{\"error\": {\"message\": \"overloaded\"")
            self.wfile.flush()
            time.sleep(args.stall_s)
            self.close_connection = True
            return
        if fault == "empty":  # 200 with no body at all
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        tokens = args.tokens or int(request.get("max_tokens", 16))
        if request.get("stream") is False and fault == "errvllm":
            return self.send_json(200, {"object": "error", "message": "engine dead", "type": "BadRequestError", "code": 400})
        if request.get("stream") is False:  # one JSON object once every token would have been made
            time.sleep(max(0.0, t0 + (args.ttft_ms + (tokens - 1) * args.itl_ms) / 1000 - time.monotonic()))
            text = "".join("" if i < args.empty_text else " tok" for i in range(args.reasoning if chat else 0, tokens))
            choice = {"index": 0, "message": {"role": "assistant", "content": text}} if chat else {"index": 0, "text": text}
            if chat and args.reasoning:
                choice["message"]["reasoning_content"] = " think" * min(args.reasoning, tokens)
                choice["message"]["content"] = text or None
            choice["finish_reason"] = "length"
            prompt = request.get("prompt") or " ".join(m["content"] for m in request["messages"])
            whole = {"id": "x", "object": "completion", "model": args.model, "choices": [choice]}
            if not args.no_usage:
                whole["usage"] = usage(prompt, tokens, text)
            return self.send_json(200, whole)
        if fault == "gzip":
            body = gzip.compress(b"".join(b"data: %s\n\n" % json.dumps({"choices": [{"index": 0, "text": " tok"}]}).encode()
                                          for _ in range(tokens)) + b"data: [DONE]\n\n")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if fault == "continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.send_response(200)
        if fault == "bighdr":
            for k in range(40):
                self.send_header("X-Gateway-%d" % k, "v" * 990)
        self.send_header("Content-Type", "text/event-stream")
        if fault == "untilclose":
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(text, finish=None, role=False, reasoning=None):
            delta = {"role": "assistant", "content": text} if role else {"content": text} if finish is None else {}
            if reasoning is not None:  # event number `reasoning`: DeepSeek-R1's field on even ones, vLLM's on odd
                delta = {"reasoning_content": " think", "content": None} if reasoning % 2 == 0 else {"reasoning": " think"}
            choice = {"index": 0, "delta": delta} if chat else {"index": 0, "text": text}
            choice["finish_reason"] = finish
            return json.dumps({"id": "x", "object": "chunk", "model": args.model, "choices": [choice]})

        if args.markers and chat:
            self.chunk(event("", role=True))
        if fault == "flood":
            blob = ("data: " + event(" tok") + "\n\n").encode() * 1000
            while True:
                self.raw_chunk(blob)
        if fault == "keepalive":
            self.chunk(event(" tok"))
            blob = b": keep-alive\n" * 10000
            while True:
                self.raw_chunk(blob)
        if fault == "longline":
            self.raw_chunk(b'data: {"x": "')
            blob = b"a" * (1 << 20)
            while True:
                self.raw_chunk(blob)
        if fault == "huge":
            self.chunk(event("x" * 10_000_000))
            tokens -= 1

        with lock:
            running[0] += 1
        try:
            for i in range(tokens):
                target = t0 + (args.ttft_ms + i * args.itl_ms) / 1000
                delay = target - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if fault == "disconnect" and i == 2:
                    self.close_connection = True
                    return
                if fault in ("errvllm", "errdetail", "errllamacpp", "errtgi") and i == 2:
                    if fault == "errvllm":
                        self.chunk(json.dumps({"object": "error", "message": "engine dead", "type": "InternalServerError", "code": 500}))
                    elif fault == "errdetail":
                        self.chunk(json.dumps({"detail": "something broke"}))
                    elif fault == "errllamacpp":
                        self.raw_chunk(b'error: {"code": 500, "message": "the request exceeds the available context size", "type": "server_error"}\n\n')
                    else:
                        self.raw_chunk(b'event: error\ndata: {"error": "Input validation error", "error_type": "validation"}\n\n')
                    if fault in ("errvllm", "errdetail"):
                        self.chunk("[DONE]")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                if fault == "ping":
                    self.raw_chunk(b"event: ping\r\ndata: 2024-05-01 12:00:00.000000\r\n\r\n")
                if fault == "malformed" and i == 1:
                    self.chunk('{"choices": [{"text": "unterminated')
                if fault == "stall" and i == 1:
                    time.sleep(args.stall_s)
                    self.close_connection = True
                    return
                self.chunk(event("" if i < args.empty_text else " tok", reasoning=i if chat and i < args.reasoning else None))
                with lock:
                    tokens_sent[0] += 1
                    if i == 0:
                        ttft_observed.append(time.monotonic() - t0)
                        entry["ttft_ms"] = (time.monotonic() - self.arrival) * 1000
            if args.markers:
                self.chunk(event("", finish="length"))
            final = {"id": "x", "object": "chunk", "model": args.model, "choices": []}
            if not args.no_usage:
                prompt = request.get("prompt") or " ".join(m["content"] for m in request["messages"])
                completion = tokens if args.usage_completion is None else json.loads(args.usage_completion)
                if fault == "huge":
                    completion += 1
                answer = "".join("" if i < args.empty_text else " tok" for i in range(args.reasoning if chat else 0, tokens))
                final["usage"] = usage(prompt, completion, answer)
            if args.timing:
                final["llmbench_timing"] = TIMING
            if len(final) > 4 or final.get("usage"):
                self.chunk(json.dumps(final))
            self.chunk("[DONE] " if fault == "donespace" else "[DONE]")
            if fault == "afterdone":
                self.chunk(json.dumps({"error": {"message": "late"}}))
                self.chunk("not json")
                self.raw_chunk(b"data: unfinished")
            if fault != "untilclose":
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            if fault == "stale":  # 20 ms later, a second, unasked-for response on the kept-alive connection
                time.sleep(0.02)
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 14\r\n\r\ndata: [DONE]\n\n")
                self.wfile.flush()

        except (BrokenPipeError, ConnectionResetError):  # the client went away mid-stream
            self.close_connection = True
            with lock:
                aborted[0] += 1
        finally:
            with lock:
                running[0] -= 1

ThreadingHTTPServer.request_queue_size = 128  # listen backlog (default 5: SYN retries of 1 s at 8+ clients)
server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
server.handle_error = lambda request, address: None  # clients that hang up mid-stream are part of the script
threading.Timer(args.lifetime_s, lambda: os._exit(3)).start()
if args.tls_cert:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.minimum_version = ssl.TLSVersion.TLSv1_2
    tls.load_cert_chain(args.tls_cert, args.tls_key)
    # The handshake happens in the request's own thread (on its first read), not in the accept loop.
    server.socket = tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
scheme = "https" if args.tls_cert else "http"
print("llmbench serve: listening on %s://127.0.0.1:%d" % (scheme, server.server_address[1]), flush=True)
server.serve_forever()
