"""Prepared compaction, measured through the proxy (issue 28; see docs/prepared-compaction.md).

Replays a real trajectory round by round through `compactor proxy` against servers on
127.0.0.1: an OpenAI-compatible upstream that answers the agent at once and bills cache
reads by the longest prefix a request shares with any earlier one, and a summarizer that
answers after SUMMARY_DELAY seconds (5 by default). Round k sends the conversation up to
the k-th assistant turn, as the agent would. A round's added latency is what the proxy's
own `compactor_proxy_added_latency_seconds_sum` grew by (the exact time it spent before
forwarding the request: session, rewrite, record, compaction or waiting).

Modes: `inline` (--no-prepare: passes run when a request reaches the trigger),
`defaults` (no flag but the summarizer: a model summarizer is prepared by default, started
from the session's pace), `upstream` (--summarizer upstream and nothing else: the
summarizer is the agent's own model through the upstream, and the summary request is the
agent's request plus one instruction).

Only the first ROUNDS model requests (40 by default) are replayed. The script checks its
own gauge: `inline` must show rounds over 1 s (a pass waits for its 5 s summary there), or
the replay did not exercise what it measures and the script fails.

Between rounds the agent "works" for AGENT_ROUND_SECONDS (1 by default; not counted).
Prints one JSON object per mode, then a Markdown table.
Usage: bench_prepared.py COMPACTOR TRAJECTORY [BUDGET]
"""

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SUMMARY_DELAY = float(os.environ.get("SUMMARY_DELAY", "5"))
# The agent's own time between two requests (its model writing the turn, the tool
# running): without it a replay crosses the whole budget faster than any summary.
AGENT_ROUND_SECONDS = float(os.environ.get("AGENT_ROUND_SECONDS", "1"))
ROUNDS = int(os.environ.get("ROUNDS", "40"))
INSTRUCTION_MARK = "The conversation to summarize is everything above this message."
SUMMARY = "The agent is fixing the reported bug; it has read the relevant sources and run the tests."


def render(body):
    out = [json.dumps(body.get("model")), json.dumps(body.get("tools"), sort_keys=True)]
    out.extend(json.dumps(m, sort_keys=True) for m in body.get("messages", []))
    return "\x01".join(out)


class Billing:
    def __init__(self):
        self.lock = threading.Lock()
        self.seen = []
        self.summaries = []  # (prompt tokens, cached tokens)

    def bill(self, body, summary):
        prompt = render(body)
        with self.lock:
            shared = 0
            # Only a summary request's share is reported: agent requests are only kept
            # (comparing them would make the upstream's own time noisy).
            for earlier in self.seen if summary else []:
                n = len(os.path.commonprefix([earlier, prompt]))
                shared = max(shared, n)
            self.seen.append(prompt)
            self.seen = self.seen[-8:]
            tokens = len(prompt) // 4
            cached = shared // 4 if shared // 4 >= 1024 else 0
            if summary:
                self.summaries.append((tokens, cached))
        return tokens, cached


def handler(billing, delay_all):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            messages = body.get("messages", [])
            last = messages[-1].get("content", "") if messages else ""
            summary = delay_all or (isinstance(last, str) and INSTRUCTION_MARK in last)
            tokens, cached = billing.bill(body, summary)
            if summary:
                time.sleep(SUMMARY_DELAY)
            text = SUMMARY if summary else "ok"
            answer = json.dumps({
                "id": "x", "object": "chat.completion", "model": body.get("model", "m"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20,
                          "prompt_tokens_details": {"cached_tokens": cached}},
            }).encode()
            try:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            except (BrokenPipeError, ConnectionResetError):
                # A summary still being written when the mode's proxy stopped.
                pass

    return Handler


def serve(billing, delay_all):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(billing, delay_all))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def post(url, body, headers):
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json", **headers})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        response.read()
    return time.perf_counter() - start


def wait_port(port):
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read()
            return
        except Exception:
            time.sleep(0.1)
    sys.exit("the proxy did not start")


def latency_sum(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith("compactor_proxy_added_latency_seconds_sum"):
            return float(line.split()[-1])
    sys.exit("no added-latency sum in /metrics")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(mode, compactor, messages, budget):
    billing = Billing()
    upstream = serve(billing, False)
    summarizer_billing = Billing()
    summarizer = serve(summarizer_billing, True)
    up = f"http://127.0.0.1:{upstream.server_port}"
    port = free_port()
    args = [compactor, "proxy", "--listen", f"127.0.0.1:{port}", "--upstream", up, "--store", "memory:",
            "--budget", str(budget)]
    if mode == "upstream":
        args += ["--summarizer", "upstream"]
    else:
        args += ["--summarizer", "openai", "--model", "summarizer", "--summarizer-context", "128000",
                 "--base-url", f"http://127.0.0.1:{summarizer.server_port}/v1"]
        if mode == "inline":
            args += ["--no-prepare"]
    # BENCH_PROXY_LOG=DIR keeps each mode's proxy log (RUST_LOG=info) as DIR/MODE.log.
    log_dir = os.environ.get("BENCH_PROXY_LOG")
    env = dict(os.environ, OPENAI_API_KEY="sk-bench", RUST_LOG="info" if log_dir else "warn")
    log = open(os.path.join(log_dir, f"{mode}.log"), "w") if log_dir else subprocess.DEVNULL
    proxy = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_port(port)
        added = []
        previous = latency_sum(port)
        headers = {"authorization": "Bearer sk-bench", "x-compactor-session": f"bench-{mode}"}
        for k, message in enumerate(messages):
            if message["role"] != "assistant" or k == 0:
                continue
            if len(added) == ROUNDS:
                break
            body = {"model": "gpt-agent", "messages": messages[:k], "prompt_cache_key": "bench"}
            post(f"http://127.0.0.1:{port}/v1/chat/completions", body, headers)
            total = latency_sum(port)
            added.append(total - previous)
            previous = total
            time.sleep(AGENT_ROUND_SECONDS)
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    finally:
        proxy.terminate()
        proxy.wait()
        upstream.shutdown()
        summarizer.shutdown()
    ms = sorted(a * 1000 for a in added)
    q = lambda f: ms[min(len(ms) - 1, int(f * len(ms)))]
    summaries = billing.summaries if mode == "upstream" else summarizer_billing.summaries
    prepared = {line.split('fate="')[1].split('"')[0]: int(float(line.split()[-1]))
                for line in metrics.splitlines() if line.startswith("compactor_proxy_prepared_total{")}
    compactions = next((int(float(l.split()[-1])) for l in metrics.splitlines()
                        if l.startswith("compactor_proxy_compactions_total")), 0)
    return {
        "mode": mode, "rounds": len(ms), "p50_ms": round(q(0.5), 2), "p99_ms": round(q(0.99), 2),
        "worst_ms": round(ms[-1], 1), "over_100ms": sum(1 for x in ms if x > 100),
        "over_1s": sum(1 for x in ms if x > 1000), "compactions": compactions, "prepared": prepared,
        "summary_requests": len(summaries),
        "summary_cache_read_share": round(sum(c for _, c in summaries) / max(1, sum(t for t, _ in summaries)), 3),
    }


def main():
    compactor, trajectory = sys.argv[1], sys.argv[2]
    budget = int(sys.argv[3]) if len(sys.argv) > 3 else 32000
    converted = subprocess.run([compactor, "convert", trajectory, "--to", "openai"], check=True,
                               capture_output=True).stdout
    value = json.loads(converted)
    messages = value["messages"] if isinstance(value, dict) else value
    modes = os.environ.get("MODES", "inline,defaults,upstream").split(",")
    results = [run(mode, compactor, messages, budget) for mode in modes]
    for r in results:
        print(json.dumps(r))
    print()
    print("| mode | rounds | added p50 ms | p99 ms | worst ms | rounds > 100 ms | > 1 s | compactions | summary requests | summary cache-read share |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['mode']} | {r['rounds']} | {r['p50_ms']} | {r['p99_ms']} | {r['worst_ms']} | {r['over_100ms']} | "
              f"{r['over_1s']} | {r['compactions']} | {r['summary_requests']} | {r['summary_cache_read_share']} |")
    inline = next((r for r in results if r["mode"] == "inline"), None)
    if inline is not None and (inline["over_1s"] == 0 or inline["summary_requests"] == 0):
        sys.exit(f"self-check failed: inline passes never waited for a summary ({inline}); "
                 "the replay does not reach the trigger: use a smaller BUDGET or more ROUNDS")


if __name__ == "__main__":
    main()
