#!/usr/bin/env python3
"""Concurrent streamed completions against `llmbench serve`, with the standard library only.

    sse_streams.py BASE_URL FILE   FILE: JSON list of {"prompt": [ids] or "text", "max_tokens": n}
Sends every request at once (greedy, ignore_eos, stream), reads each Server-Sent Events stream to its
`[DONE]`, and prints the texts as one JSON list in request order. Exits 1 on an HTTP error, an error event,
a stream that ends without `[DONE]`, or a finish reason other than `length`.
"""
import http.client
import json
import sys
import threading
import urllib.parse


def stream(base, request, out, i):
    url = urllib.parse.urlparse(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    body = dict(model="tiny", temperature=0, ignore_eos=True, stream=True, **request)
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        out[i] = RuntimeError(f"request {i}: HTTP {resp.status}: {resp.read()[:200]!r}")
        return
    text, finish, done, lines = "", None, False, []
    for raw in resp:
        line = raw.decode().strip()
        lines.append(line)
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            break
        event = json.loads(data)
        if "error" in event:
            out[i] = RuntimeError(f"request {i}: error event {event['error']}")
            return
        for choice in event.get("choices", []):
            text += choice.get("text") or ""
            finish = choice.get("finish_reason") or finish
    conn.close()
    if not done or finish != "length":
        out[i] = RuntimeError(f"request {i}: stream ended (done {done}, finish {finish}, text {text!r}, last lines {lines[-3:]!r})")
        return
    out[i] = text


def main():
    base, path = sys.argv[1], sys.argv[2]
    requests = json.load(open(path))
    out = [None] * len(requests)
    threads = [threading.Thread(target=stream, args=(base, r, out, i)) for i, r in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = [o for o in out if not isinstance(o, str)]
    if bad:
        print(bad[0], file=sys.stderr)
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
