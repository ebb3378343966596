"""What the model gateway costs: latency per call, and a group of 8 through it vs in process.

    python benchmarks/gateway.py [--model smollm2-135m] [--calls 300] [--group 8] [--turns 3] [--new-tokens 64]

1. Added latency per call. One episode's gateway (harnessrl.gateway) on loopback and a scripted
   answer (the session side answers as soon as the call is taken); the real `openai` client
   sends `--calls` chat completions carrying a mini-swe-agent-sized conversation (~6 KB). The
   round trip is what the gateway adds to a call (HTTP, JSON, the hand-over between threads);
   p50/p95 in ms, and p50 as a share of one SmolLM2 call (the same model's generation of
   `--new-tokens` tokens after the conversation's prompt, timed here).
   The floor it is compared with is what a user would write by hand for the same job: the
   standard library's `http.server.ThreadingHTTPServer` answering the same requests with the
   same response body directly in its handler (no credential check, no request checks, no
   hand-over to another thread), with TCP_NODELAY as the gateway has; the same client, the same
   number of calls, interleaved with the gateway's in blocks so both see the same machine load.
2. A group of 8. The anchor is the same group in process: `LMPolicy.act` on 8 conversations,
   `--turns` turns (each turn appends the reply and a fixed user message). Ours: 8 clients, each
   with its own gateway and api key, send the same conversations over HTTP; the driver takes the
   8 pending calls, answers them with ONE batched `act` (as the rollout loop does) and hands the
   answers back. Same seed, same prompts: the sampled texts must be identical (checked), so both
   sides generate the same tokens; the ratio is gateway tokens/s / in-process tokens/s
   (target >= 0.9). Each episode samples from its own stream (policies/sampling.py), keyed by
   its episode key, so both sides use the same keys.

The last line is one JSON object: {"benchmark", "ours", "anchor", "unit", "ratio", "target",
"p50_ms", "p95_ms", "floor_p50_ms", "floor_p95_ms", ...}: `ratio` is gateway / in process for the
group, `p95_ms` the gateway's round trip, `floor_*` the bare http.server's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRANSFORMERS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(_k, _v)

import openai  # noqa: E402
import torch  # noqa: E402

from harnessrl.gateway import Gateway, Reply  # noqa: E402
from harnessrl.gateway.openai_wire import completion_json  # noqa: E402
from harnessrl.policies.base import AgentState  # noqa: E402
from harnessrl.policies.lm import LMConfig, LMPolicy  # noqa: E402

SYSTEM = "You are a helpful assistant that can interact with a computer. Reply with one bash block." * 4
TASK = ("Please solve this issue: `greet.py` is a command-line tool; add a --shout flag that prints the greeting "
        "in capitals, and keep the default output unchanged. ") * 6
OBS = "<returncode>0</returncode>\n<output>\n" + "total 12\n-rw-r--r-- 1 agent agent 412 greet.py\n" * 40 + "</output>"


def conversation(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"[episode {i}] {TASK}"}]


ANSWER = "THOUGHT: ok.\n\n```mswea_bash_command\nls\n```"


class _Floor(BaseHTTPRequestHandler):
    """The hand-written floor: read the body, parse it, answer the same JSON at once."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps(completion_json("chatcmpl-floor", body["model"], Reply(content=ANSWER))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def latency(calls: int, block: int = 25) -> tuple[list[float], list[float]]:
    """Round trips (ms) through the gateway and through the bare http.server, interleaved in blocks."""
    gw = Gateway(api_key="sk-bench", model="bench").start()
    floor = ThreadingHTTPServer(("127.0.0.1", 0), _Floor)
    threading.Thread(target=floor.serve_forever, daemon=True).start()
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            call = gw.next_call(timeout=0.05)
            if call is not None:
                gw.answer(call, Reply(content=ANSWER))

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    clients = [openai.OpenAI(base_url=gw.base_url, api_key="sk-bench", max_retries=0),
               openai.OpenAI(base_url=f"http://127.0.0.1:{floor.server_address[1]}/v1", api_key="x", max_retries=0)]
    messages = conversation(0) + [{"role": "assistant", "content": "THOUGHT: look.\n\n```mswea_bash_command\nls -l\n```"},
                                  {"role": "user", "content": OBS}]
    out: tuple[list[float], list[float]] = ([], [])
    for client in clients:  # the first calls warm up each client's connection pool and imports
        for _ in range(10):
            client.chat.completions.create(model="bench", messages=messages)
    for start in range(0, calls, block):
        for side, client in enumerate(clients):
            for _ in range(min(block, calls - start)):
                t0 = time.perf_counter()
                client.chat.completions.create(model="bench", messages=messages)
                out[side].append((time.perf_counter() - t0) * 1e3)
    stop.set()
    gw.close()
    floor.shutdown()
    floor.server_close()
    return out


def in_process(lm: LMPolicy, group: int, turns: int, seed: int) -> tuple[list[list[str]], int, float]:
    lm.reseed(seed)
    states = [AgentState(conversation(i), "bench", f"t{i}", 0, f"e{i}") for i in range(group)]
    texts: list[list[str]] = [[] for _ in range(group)]
    tokens, t0 = 0, time.perf_counter()
    for _ in range(turns):
        actions = lm.act(states)
        for i, (s, a) in enumerate(zip(states, actions)):
            tokens += int(a.loss_mask.sum())
            texts[i].append(a.text)
            s.messages = s.messages + [{"role": "assistant", "content": a.text}, {"role": "user", "content": OBS}]
    wall = time.perf_counter() - t0
    for s in states:
        lm.end_episode(s)
    return texts, tokens, wall


def through_gateways(lm: LMPolicy, group: int, turns: int, seed: int) -> tuple[list[list[str]], int, float]:
    lm.reseed(seed)
    gws = [Gateway(api_key=f"sk-{i}", model="bench").start() for i in range(group)]
    texts: list[list[str]] = [[] for _ in range(group)]

    def program(i: int) -> None:  # a client that keeps its own conversation, as an agent program does
        client = openai.OpenAI(base_url=gws[i].base_url, api_key=f"sk-{i}", max_retries=0, timeout=7200)
        messages = conversation(i)
        for _ in range(turns):
            text = client.chat.completions.create(model="bench", messages=messages).choices[0].message.content
            texts[i].append(text)
            messages = messages + [{"role": "assistant", "content": text}, {"role": "user", "content": OBS}]

    threads = [threading.Thread(target=program, args=(i,), daemon=True) for i in range(group)]
    states = [AgentState([], "bench", f"t{i}", 0, f"e{i}") for i in range(group)]  # the in-process run's keys
    tokens, t0 = 0, time.perf_counter()
    for t in threads:
        t.start()
    for _ in range(turns):
        calls = [gw.next_call(timeout=7200) for gw in gws]  # the lockstep loop: every pending call, then one act
        for s, call in zip(states, calls):
            s.messages = [{"role": m["role"], "content": m["content"]} for m in call.request["messages"]]
        actions = lm.act(states)
        for gw, call, a in zip(gws, calls, actions):
            tokens += int(a.loss_mask.sum())
            gw.answer(call, Reply(content=a.text, completion_tokens=int(a.loss_mask.sum())))
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    for s in states:
        lm.end_episode(s)
    for gw in gws:
        gw.close()
    return texts, tokens, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    lat, bare = (sorted(x) for x in latency(args.calls))
    p50, p95 = statistics.median(lat), lat[int(0.95 * (len(lat) - 1))]
    f50, f95 = statistics.median(bare), bare[int(0.95 * (len(bare) - 1))]
    load = os.getloadavg()[0]
    print(f"round trip over {len(lat)} calls each (load average {load:.1f}): gateway p50 {p50:.2f} ms, p95 {p95:.2f} ms; "
          f"bare http.server p50 {f50:.2f} ms, p95 {f95:.2f} ms", flush=True)

    lm = LMPolicy.from_config(LMConfig(model=args.model, max_new_tokens=args.new_tokens, temperature=1.0,
                                       dtype="float32", device="cpu", decode_threads=args.threads))
    one = AgentState(conversation(0) + [{"role": "assistant", "content": "ls"}, {"role": "user", "content": OBS}],
                     "bench", "t", 0, "one")
    t0 = time.perf_counter()
    lm.act([one])
    call_ms = (time.perf_counter() - t0) * 1e3
    lm.end_episode(one)
    print(f"one {args.model} call: {call_ms:.0f} ms; the gateway's p50 is {100 * p50 / call_ms:.3f}% of it", flush=True)

    ref_texts, ref_tokens, ref_wall = in_process(lm, args.group, args.turns, seed=1)
    gw_texts, gw_tokens, gw_wall = through_gateways(lm, args.group, args.turns, seed=1)
    if not ref_tokens or not gw_tokens:
        sys.exit(f"error: --model {args.model}: no tokens were generated (the conversation may not fit the "
                 "model's context); use a model with a longer window")
    anchor, ours = ref_tokens / ref_wall, gw_tokens / gw_wall
    same = ref_texts == gw_texts
    print(f"group of {args.group}, {args.turns} turns: in process {ref_tokens} tokens in {ref_wall:.1f} s "
          f"({anchor:.1f} tok/s); through gateways {gw_tokens} tokens in {gw_wall:.1f} s ({ours:.1f} tok/s); "
          f"identical samples: {same}", flush=True)
    print(json.dumps({"benchmark": "gateway", "ours": round(ours, 2), "anchor": round(anchor, 2), "unit": "tokens/s",
                      "ratio": round(ours / anchor, 3), "target": 0.9, "p50_ms": round(p50, 3), "p95_ms": round(p95, 3),
                      "p95_target_ms": 15, "floor_p50_ms": round(f50, 3), "floor_p95_ms": round(f95, 3),
                      "added_p50_ms": round(p50 - f50, 3), "load_average": round(load, 1),
                      "p50_share_of_call": round(p50 / call_ms, 5), "identical_samples": same,
                      "model": args.model, "group": args.group, "turns": args.turns, "new_tokens": args.new_tokens}))


if __name__ == "__main__":
    main()
