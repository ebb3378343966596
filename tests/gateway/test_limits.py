"""The gateway against an adversarial program (gateway/limits.py, connections.py): each limit
found missing in a red-team round, attacked over real loopback sockets, and a good request
answered afterwards every time."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from types import SimpleNamespace

import pytest

from harnessrl.config import ConfigError
from harnessrl.gateway import Gateway, Limits, Reply, server
from harnessrl.gateway.limits import nesting_depth

from .test_server import KEY, Responder, client

GOOD = {"model": "tiny", "messages": [{"role": "user", "content": "x"}]}


def gateway(**limits) -> Gateway:
    return Gateway(api_key=KEY, model="tiny", max_calls=50, limits=Limits(**limits)).start()


def post(gw: Gateway, body: bytes | dict, path: str = "/v1/chat/completions", key: str = KEY) -> tuple[int, dict]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    try:
        conn.request("POST", path, raw, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def answers_a_good_request(gw: Gateway) -> bool:
    Responder(gw, [Reply(content="still here")])
    out = client(gw).chat.completions.create(**GOOD)
    return out.choices[0].message.content == "still here"


def wait_for(pred, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def test_half_open_connections_past_the_cap_cost_no_thread():
    gw = gateway(max_connections=8, idle_timeout_s=30)
    before = threading.active_count()
    socks = []
    try:
        for _ in range(200):  # connect, send nothing: each held a thread for 600 s before
            socks.append(socket.create_connection(("127.0.0.1", gw.port), timeout=10))
            time.sleep(0.002)  # the server's accept loop shares this process's GIL: let it keep up with us
        wait_for(lambda: gw.refusal_counts.get("too_many_connections", 0) >= 192, timeout=10)
        assert threading.active_count() <= before + 8
        assert gw._server.open_connections == 8
        assert gw.refusal_counts == {"too_many_connections": 192} and len(gw.refusals) == 20
    finally:
        for s in socks:
            s.close()
    assert wait_for(lambda: gw._server.open_connections == 0)  # closed by the client: the slots free at once
    assert threading.active_count() <= before and answers_a_good_request(gw)
    gw.close()


def _cut_after(sock: socket.socket, trickle: bytes, every: float, limit: float) -> float:
    """Send `trickle` a byte every `every` s until the server closes; the seconds it took."""
    start = time.monotonic()
    try:
        for b in trickle:
            sock.sendall(bytes([b]))
            time.sleep(every)
            if time.monotonic() - start > limit:
                break
        sock.settimeout(limit)
        while sock.recv(4096):  # the server closes without an answer
            pass
    except (BrokenPipeError, ConnectionResetError):
        pass
    return time.monotonic() - start


def test_a_slow_client_is_cut_at_the_request_deadline_and_an_idle_one_quietly():
    gw = gateway(request_timeout_s=1.0, idle_timeout_s=1.5)
    try:
        headers = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                   + "X-Pad: " + "a" * 400 + "\r\n").encode()
        with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:  # slow-loris headers
            assert _cut_after(s, headers, 0.05, limit=8) < 3.0
        body = json.dumps(GOOD).encode()
        with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:  # quick headers, slow body
            s.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n".encode())
            assert _cut_after(s, body, 0.1, limit=8) < 3.0
        with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:  # nothing sent
            assert _cut_after(s, b"", 0, limit=8) < 3.5
        assert gw.refusal_counts == {"slow_request": 2} and gw.n_calls == 0  # idling is no refusal
        assert wait_for(lambda: gw._server.open_connections == 0) and answers_a_good_request(gw)
    finally:
        gw.close()


def test_5000_bad_key_calls_are_one_count_and_a_bounded_sample():
    gw = gateway()
    try:
        for _ in range(5000):
            status, _ = post(gw, GOOD, key="sk-not-this-episode")
            assert status == 401
        assert gw.refusal_counts == {"bad_key": 5000}
        assert len(gw.refusals) == 20 and all(r.kind == "bad_key" for r in gw.refusals)
        # what an episode records (harness/program.py: refusals + refusal_counts) stays small
        record = {"refusals": [(r.status, r.code, r.reason) for r in gw.refusals], "refusal_counts": gw.refusal_counts}
        assert len(json.dumps(record)) < 4096
        assert answers_a_good_request(gw)
    finally:
        gw.close()


def test_garbled_http_is_a_counted_refusal_too():
    gw = gateway()
    try:
        for raw in (b"GET / HTTP/x.y\r\n\r\n", b"GET /v1/models HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n",
                    b"OPTIONS /v1/models HTTP/1.1\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:
                s.sendall(raw)
                assert s.recv(100)  # http.server's error page (a bad version gets no status line: HTTP/0.9)
        assert gw.refusal_counts == {"bad_http": 3} and answers_a_good_request(gw)
    finally:
        gw.close()


def test_a_refusals_reason_is_truncated_in_the_sample():
    gw = gateway()
    try:
        assert post(gw, {"input": [{"type": "z" * 20_000}]}, "/v1/responses")[0] == 400  # the type is quoted
        assert gw.refusal_counts == {"malformed": 1} and len(gw.refusals[0].reason) < 400
        assert gw.refusals[0].reason.endswith("chars)")
    finally:
        gw.close()


MSG = [{"role": "user", "content": "x"}]
CHAT_MALFORMED = [
    {"messages": MSG, "tools": [1]},
    {"messages": MSG, "tools": ["bash"]},
    {"messages": MSG, "tools": [{"type": "function", "function": "bash"}]},
    {"messages": MSG, "tools": [{"type": "function", "function": {"name": "b", "parameters": "x"}}]},
    {"messages": MSG, "tools": {"bash": {}}},
    {"messages": MSG, "tool_choice": {"type": "function", "function": "x"}},
    {"messages": MSG, "tool_choice": {"type": "function", "function": ["x"]}},
    {"messages": MSG, "tool_choice": 3},
    {"messages": MSG, "stream": True, "stream_options": 5},
    {"messages": MSG, "stream": True, "stream_options": {"include_usage": "yes"}},
    {"messages": MSG, "stream_options": []},
    {"messages": "hi"},
    {"messages": {"role": "user"}},
    {"messages": [1]},
    {"messages": [{"role": ["user"], "content": "x"}]},
    {"messages": [{"role": "user", "content": 5}]},
    {"messages": [{"role": "user", "content": [1]}]},
    {"messages": [{"role": "user", "content": {"text": "x"}}]},
    {"messages": [{"role": "assistant", "content": None, "tool_calls": [1]}]},
    {"messages": [{"role": "assistant", "content": None, "tool_calls": "x"}]},
    {"messages": [{"role": "assistant", "content": None, "tool_calls": [{"function": "f"}]}]},
    {"messages": [{"role": "assistant", "content": None,
                   "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}]},
    {"messages": [{"role": "user", "content": None, "tool_calls": []}]},
    {"model": 5, "messages": MSG},
    {"model": ["tiny"], "messages": MSG},
    {"messages": MSG, "n": True},
    {"messages": MSG, "n": "1"},
    {"messages": MSG, "max_tokens": True},
    {"messages": MSG, "stop": [1]},
    {"messages": MSG, "temperature": "hot"},
    [],
    "messages",
    None,
]
RESPONSES_MALFORMED = [
    {"input": "x", "tools": [1]},
    {"input": "x", "tools": [{"type": "function", "name": 3}]},
    {"input": "x", "tools": "bash"},
    {"input": "x", "tools": [{"type": "function", "name": "b", "parameters": 7}]},
    {"input": "x", "tool_choice": {"type": "function", "name": ["x"]}},
    {"input": "x", "tool_choice": 3},
    {"input": "x", "model": 5},
    {"input": 5},
    {"input": {"type": "message"}},
    {"input": [1]},
    {"input": [{"type": ["message"], "role": "user", "content": "x"}]},
    {"input": [{"type": "message", "role": {}, "content": "x"}]},
    {"input": [{"type": "message", "role": "user", "content": 3}]},
    {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": 1}]}]},
    {"input": [{"type": "function_call", "call_id": 1, "name": "f", "arguments": "{}"}]},
    {"input": [{"type": "function_call_output", "call_id": "c", "output": 5}]},
    {"input": "x", "instructions": ["be brief"]},
    {"input": "x", "max_output_tokens": "many"},
    {"input": "x", "stream": "yes"},
    [],
]
RAW_MALFORMED = [b"{not json", b'{"messages": [{"role": "user", "content": NaN}]}', b"\xff\xfe{}",
                 b'{"messages": [{"role": "user", "content": "\\ud800"}]}', b"]]]]", b'"\\', b""]


@pytest.mark.parametrize("path,bodies", [("/v1/chat/completions", CHAT_MALFORMED),
                                         ("/v1/responses", RESPONSES_MALFORMED)], ids=["chat", "responses"])
def test_every_malformed_body_is_a_counted_400_and_the_gateway_still_answers(path, bodies):
    gw = gateway()
    try:
        for body in [*bodies, *RAW_MALFORMED]:
            status, data = post(gw, body if isinstance(body, bytes) else json.dumps(body).encode(), path)
            assert (status, data["error"]["code"]) == (400, "invalid_request_error"), body
        assert gw.refusal_counts == {"malformed": len(bodies) + len(RAW_MALFORMED)} and gw.n_calls == 0
        assert answers_a_good_request(gw)
    finally:
        gw.close()


def test_oversized_deep_and_long_bodies_are_refused_before_parsing(monkeypatch):
    gw = gateway(max_request_bytes=100_000, max_depth=32, max_messages=50, max_tools=10)
    parsed = []  # the server's own json.loads calls (the test's are its own)
    monkeypatch.setattr(server, "json", SimpleNamespace(
        dumps=json.dumps, loads=lambda *a, **k: parsed.append(1) or json.loads(*a, **k)))
    try:
        # a Content-Length past the cap: refused before one byte of the body is read (none is sent)
        conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
        conn.putrequest("POST", "/v1/chat/completions")
        conn.putheader("Authorization", f"Bearer {KEY}")
        conn.putheader("Content-Length", str(10 << 30))
        conn.endheaders()
        resp = conn.getresponse()
        assert (resp.status, json.loads(resp.read())["error"]["code"]) == (400, "context_length_exceeded")
        conn.close()
        deep = b'{"messages": ' + b"[" * 40_000 + b"]" * 40_000 + b"}"  # 200,000 deep once: RecursionError
        for path in ("/v1/chat/completions", "/v1/responses"):
            status, data = post(gw, deep, path)
            assert status == 400 and "nested 40001 deep" in data["error"]["message"]
        assert parsed == []  # neither reached json.loads
        monkeypatch.undo()
        Responder(gw, [Reply(content="ok")])  # brackets inside strings are text, not nesting
        assert post(gw, {"messages": [{"role": "user", "content": "[{" * 5000}]})[0] == 200
        many = {"messages": MSG * 51}
        status, data = post(gw, many)
        assert status == 400 and "at most 50" in data["error"]["message"]
        tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(11)]
        assert post(gw, {"messages": MSG, "tools": tools})[0] == 400
        assert post(gw, {"input": [{"role": "user", "content": "x"}] * 51}, "/v1/responses")[0] == 400
        assert post(gw, {"input": "x", "tools": [{"type": "web_search"}] * 11}, "/v1/responses")[0] == 400
        assert gw.refusal_counts == {"too_large": 1, "too_deep": 2, "too_many": 4} and gw.n_calls == 1
        assert answers_a_good_request(gw)
    finally:
        gw.close()


def test_nesting_depth_counts_outside_strings_without_recursion():
    assert nesting_depth(b'{"a": [1, {"b": []}]}') == 4
    assert nesting_depth(b'{"a": "[[[[{{{{", "b": "\\"[[["}') == 1
    assert nesting_depth(b"[" * 200_000) == 200_000
    assert nesting_depth(b"") == nesting_depth(b'"unterminated [[[') == 0
    start = time.monotonic()  # quotes that never close, and escaped ones: linear, not one rescan per quote
    for raw in (b'"\\"' * 1_000_000, b'"' + b"\\" * 2_000_001, b'["' * 1_000_000, b"[" * (4 << 20)):
        nesting_depth(raw)
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("field,value", [("max_connections", 0), ("request_timeout_s", -1), ("idle_timeout_s", "5"),
                                         ("max_depth", 2.5), ("refusal_samples", True),
                                         ("request_timeout_s", float("inf"))])
def test_a_bad_limit_is_a_one_line_error_naming_it(field, value):
    with pytest.raises(ConfigError, match=f"^gateway {field}=") as err:
        Limits(**{field: value})
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=f"^options.gateway.{field}="):
        Limits.from_options({"gateway": {field: value}})
    with pytest.raises(ConfigError, match="^options.gateway.max_conns: not a gateway limit"):
        Limits.from_options({"gateway": {"max_conns": 4}})
    with pytest.raises(ConfigError, match="^options.max_request_bytes="):
        Limits.from_options({"max_request_bytes": 0})
    assert Limits.from_options({"max_request_bytes": 99, "gateway": {"max_connections": 3}}) == Limits(
        max_request_bytes=99, max_connections=3)


def test_a_program_harness_names_its_bad_gateway_option_before_any_episode():
    from harnessrl.harness.base import load_spec, make_harness

    assert make_harness(load_spec("mini-swe-agent", ["options.gateway.max_connections=4"])).gateway_limits == Limits(
        max_connections=4)
    with pytest.raises(ConfigError, match="^options.gateway.request_timeout_s='soon': must be a number of seconds"):
        make_harness(load_spec("mini-swe-agent", ["options.gateway.request_timeout_s=soon"]))
