"""The model gateway: an OpenAI-compatible endpoint that serves one episode's program.

    gw = Gateway(api_key=key, model="smollm2-135m", sock=net.listen())   # a listener in the episode netns
    gw.start()                      # serves http://127.0.0.1:<port>/v1 from host threads
    call = gw.next_call(timeout=5)  # the program's next POST /v1/chat/completions (or /v1/responses), or None
    gw.answer(call, Reply(content="..."))   # the HTTP thread writes the response (JSON or SSE)
    gw.close("episode ended")       # every later request is refused; waiting ones too

The gateway is transport only: it checks, queues and answers. It holds no weights, records or
rewards; what a call means (the harness Session's next turn) and what answers it (one batched
`policy.act` of the rollout loop) live above it. One gateway serves one episode: it knows one
credential, and every request must carry it (`Authorization: Bearer KEY`).

Refusals end a program's call at once instead of being retried. Clients retry 408/409/429/5xx
(the openai SDK by itself; litellm-based programs through tenacity on top), so every refusal is
a 4xx that they give up on, with `x-should-retry: false` for the SDK (openai `_should_retry`):

    401 invalid_api_key          no or another episode's credential
    400 context_length_exceeded  a body over `max_request_bytes` (the programs stop on it at once)
    400 invalid_request_error    malformed JSON / fields, nesting past `max_depth`, too many messages/tools
    411 invalid_request_error    no Content-Length
    403 budget_exceeded          calls beyond `max_calls`, or the episode's budget was declared spent
    403 episode_ended            the gateway was closed while the call waited or after
    404 / 405                    unknown path or method

`POST /v1/responses` (the Responses wire, for programs that speak only it) is served by
translation (responses_wire.py): the call's `request` is the chat-completions form of its body,
and its answer goes back as a Responses object or event stream; `Call.wire` says which.

An adversarial program is held to `Limits` (limits.py, connections.py): connections at once, a
deadline per request, the body's size, nesting and list lengths, checked before it is parsed or
admitted. Refusals are counted by kind (`Gateway.refusal_counts`) and the first
`refusal_samples` kept with their reasons (`Gateway.refusals`), so an episode can report why its
program stopped without one record per refusal.

Standard library only (`http.server.ThreadingHTTPServer`): one episode has at most a few
concurrent requests, the server runs on a socket the host created inside the episode's network
namespace, and no third-party server is needed for that (aiohttp would add an event loop per
episode).
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import logging
import queue
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from harnessrl.gateway.connections import CappedServer, DeadlineHandler
from harnessrl.gateway.limits import Limits, Refusal, RefusalLog, nesting_depth, no_constants
from harnessrl.gateway.openai_wire import WireError, check_request, completion_json, sse_chunks
from harnessrl.gateway.responses_wire import response_events, response_json, to_chat

log = logging.getLogger("harnessrl.gateway")


@dataclass(slots=True)
class Reply:
    """What answers one call: plain content and/or OpenAI `tool_calls` dicts."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str = "stop"  # stop | length | tool_calls
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # token fields in vLLM's shape, written only when the request asked (serving as an upstream: forward mode)
    logprobs: dict[str, Any] | None = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None


@dataclass(slots=True)
class Call:
    """One pending `POST /v1/chat/completions`, waiting in the gateway for its answer."""

    id: str
    request: dict[str, Any]  # the checked JSON body, as the program sent it
    received: float  # time.monotonic() at arrival
    done: threading.Event = field(default_factory=threading.Event)
    reply: Reply | None = None
    refused: tuple[int, str, str] | None = None  # (status, code, message) when closed while waiting
    wire: str = "chat"  # "chat" (/v1/chat/completions) or "responses" (/v1/responses, translated)


class Gateway:
    """One episode's endpoint (module docstring). Thread-safe; `next_call`/`answer` from any thread."""

    def __init__(self, *, api_key: str, model: str, sock: socket.socket | None = None,
                 max_request_bytes: int | None = None, max_calls: int = 1000, url: str | None = None,
                 limits: Limits | None = None):
        if not api_key:
            raise ValueError("a gateway needs a non-empty api key")
        if sock is not None and sock.family == socket.AF_UNIX and not url:
            raise ValueError("a gateway on a Unix socket needs the url its program uses (its forwarder's)")
        limits = limits or Limits()
        if max_request_bytes is not None:  # the older keyword, still taken
            limits = dataclasses.replace(limits, max_request_bytes=max_request_bytes)
        self.api_key, self.model, self._url, self.limits = api_key, model, url, limits
        self.max_request_bytes, self.max_calls = limits.max_request_bytes, int(max_calls)
        self.calls: queue.Queue[Call] = queue.Queue()
        self._refusals = RefusalLog(limits.refusal_samples)
        self.n_calls = 0
        self._lock = threading.Lock()
        self._waiting: dict[str, Call] = {}
        self._closed = ""  # why, once closed
        self._spent = ""  # why, once the episode's budget is spent
        self._server = _Server(self, sock)
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port served (0 on a Unix socket: the program reaches it through a forwarder)."""
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What the program is told: this listener, or the forwarder in front of a Unix socket."""
        return self._url or f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "Gateway":
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"harnessrl-gateway-{self.port}", daemon=True)
        self._thread.start()
        return self

    def close(self, reason: str = "episode ended") -> None:
        """Refuse every waiting and later call, stop serving and close the listener."""
        with self._lock:
            if self._closed:
                return
            self._closed = reason or "episode ended"
            waiting = list(self._waiting.values())
        for call in waiting:
            call.refused = (403, "episode_ended", self._closed)
            call.done.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def spend(self, reason: str) -> None:
        """The episode's budget is spent (turns, tokens, wall time): refuse every later call."""
        with self._lock:
            self._spent = self._spent or reason

    # -- the session's side ---------------------------------------------------------------

    def next_call(self, timeout: float | None = None) -> Call | None:
        """The next call the program made, oldest first; None when none came within `timeout`."""
        try:
            return self.calls.get(timeout=timeout)
        except queue.Empty:
            return None

    def answer(self, call: Call, reply: Reply) -> None:
        call.reply = reply
        call.done.set()

    # -- the HTTP side (runs in the server's threads) --------------------------------------

    def _admit(self, body: dict[str, Any], wire: str = "chat") -> Call | tuple[int, str, str]:
        with self._lock:
            if self._closed:
                return 403, "episode_ended", f"the episode has ended ({self._closed})"
            if self._spent:
                return 403, "budget_exceeded", f"the episode's budget is spent ({self._spent})"
            if self.n_calls >= self.max_calls:
                return 403, "budget_exceeded", f"the episode's call budget ({self.max_calls} calls) is spent"
            self.n_calls += 1
            call = Call(id=f"chatcmpl-{uuid.uuid4().hex[:24]}", request=body, received=time.monotonic(), wire=wire)
            self._waiting[call.id] = call
        self.calls.put(call)
        return call

    def _release(self, call: Call) -> None:
        with self._lock:
            self._waiting.pop(call.id, None)

    @property
    def refusals(self) -> list[Refusal]:
        """The first `limits.refusal_samples` refusals (reasons truncated); all are in `refusal_counts`."""
        return self._refusals.snapshot()[0]

    @property
    def refusal_counts(self) -> dict[str, int]:
        """Every refusal so far, counted by kind (limits.KIND_OF_CODE and the limits' own kinds)."""
        return self._refusals.snapshot()[1]

    def _refused(self, status: int, code: str, reason: str, kind: str | None = None) -> None:
        sampled = self._refusals.add(status, code, reason, kind)
        # a call cut off by the episode's end is expected (the program is killed next); the rest is
        # news, but only while it is sampled: 5,000 bad-key calls must not write 5,000 warnings
        level = logging.INFO if code == "episode_ended" else logging.WARNING
        log.log(level if sampled else logging.DEBUG, "gateway :%d refused a request: %d %s: %s", self.port, status,
                code, reason[:300])

    def authorized(self, header: str | None) -> bool:
        scheme, _, token = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self.api_key.encode())


class _Server(CappedServer):
    daemon_threads = True  # a program killed mid-call must not keep the host process alive
    request_queue_size = 16

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a program killed while its connection was open (reset, broken pipe) is not the host's error
        log.debug("gateway :%d: a connection from %s ended abnormally", self.server_address[1], client_address,
                  exc_info=True)

    def __init__(self, gateway: Gateway, sock: socket.socket | None):
        self.gateway = gateway
        super().__init__(("127.0.0.1", 0), _Handler, bind_and_activate=sock is None)
        if sock is not None:  # the host made it (inside the episode's network namespace): serve it as it is
            self.socket.close()
            self.socket = sock
            # a Unix socket (the rootless episode network, tasks/unix_net.py) has a path, no port
            self.server_address = (sock.getsockname(), 0) if sock.family == socket.AF_UNIX else sock.getsockname()[:2]


class _Handler(DeadlineHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "harnessrl-gateway"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        # headers and body go out as two writes: without TCP_NODELAY the second waits for the
        # client's delayed ACK (~40 ms a call on Linux loopback)
        if self.connection.family != socket.AF_UNIX:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.start_clock()  # every read within the request deadline (connections.py)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("gateway :%d %s", self.server.gateway.port, format % args)

    # -- routing ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        gw = self.server.gateway
        if not self._auth():
            return
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [
                {"id": gw.model, "object": "model", "created": 0, "owned_by": "harnessrl"}]})
        elif self.path.rstrip("/").startswith(("/v1/models/", "/models/")) and self.path.rstrip("/").endswith("/" + gw.model):
            self._json(200, {"id": gw.model, "object": "model", "created": 0, "owned_by": "harnessrl"})
        else:
            self._refuse(404, "not_found", f"no such path {self.path[:200]!r}; this gateway serves /v1/chat/completions and /v1/models")

    def do_POST(self) -> None:
        gw = self.server.gateway
        path = self.path.rstrip("/")
        wire = "responses" if path in ("/v1/responses", "/responses") else "chat"
        if wire == "chat" and path not in ("/v1/chat/completions", "/chat/completions"):
            self._drain()
            self._refuse(404, "not_found", f"no such path {self.path[:200]!r}; this gateway serves "
                         "/v1/chat/completions and /v1/responses")
            return
        if not self._auth():
            return
        try:
            length = int(self.headers.get("Content-Length") or -1)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True  # a body of unknown length cannot be skipped
            self._refuse(411, "invalid_request_error", "a request body needs a Content-Length", "no_length")
            return
        if length > gw.max_request_bytes:
            self.close_connection = True  # the body is not read: the connection cannot be reused
            self._refuse(400, "context_length_exceeded", f"request of {length} bytes exceeds this model's maximum "
                         f"context length (the gateway takes at most {gw.max_request_bytes} bytes)")
            return
        raw = self.rfile.read(length)  # within the request deadline (setup)
        self.clock.done()
        body = self._parse(raw, wire)
        if body is None:
            return
        admitted = gw._admit(body, wire)
        if isinstance(admitted, tuple):
            self._refuse(*admitted)
            return
        call = admitted
        try:
            call.done.wait()
            if call.refused is not None or call.reply is None:
                self._refuse(*(call.refused or (403, "episode_ended", "the episode has ended")))
                return
            if wire == "responses":
                if body.get("stream"):
                    self._sse_events(response_events(call.id, gw.model, call.reply))
                else:
                    self._json(200, response_json(call.id, gw.model, call.reply))
            elif body.get("stream"):
                self._sse(call, call.reply)
            else:
                self._json(200, completion_json(call.id, gw.model, call.reply))
        finally:
            gw._release(call)

    def _parse(self, raw: bytes, wire: str) -> dict[str, Any] | None:
        """The checked chat-form body, or None once refused (400, counted by kind)."""
        limits = self.server.gateway.limits
        depth = nesting_depth(raw)  # json.loads recurses: a 200,000-deep array must never reach it
        if depth > limits.max_depth:
            self._refuse(400, "invalid_request_error", f"invalid request: JSON nested {depth} deep; this gateway "
                         f"takes at most {limits.max_depth}", "too_deep")
            return None
        caps = {"max_messages": limits.max_messages, "max_tools": limits.max_tools}
        try:
            obj = json.loads(raw, parse_constant=no_constants)
            body = to_chat(obj, **caps) if wire == "responses" else check_request(obj, **caps)
            # a lone surrogate (\ud800) parses, then fails the first utf-8 encode downstream (records)
            json.dumps(body, ensure_ascii=False).encode()
        except (ValueError, WireError) as err:  # UnicodeError and JSONDecodeError are ValueErrors
            self._refuse(400, "invalid_request_error", f"invalid request: {err}", getattr(err, "kind", "malformed"))
            return None
        except Exception as err:  # a shape the checks missed is still a refused request, never a dead thread
            log.warning("gateway :%d: unchecked request shape", self.server.gateway.port, exc_info=True)
            self._refuse(400, "invalid_request_error", f"invalid request: {type(err).__name__}", "malformed")
            return None
        return body

    def do_PUT(self) -> None:
        self._drain()
        self._refuse(405, "method_not_allowed", "only GET /v1/models, POST /v1/chat/completions and POST "
                     "/v1/responses are served")

    do_DELETE = do_PATCH = do_PUT

    # -- responses --------------------------------------------------------------------------

    def _auth(self) -> bool:
        if self.server.gateway.authorized(self.headers.get("Authorization")):
            return True
        self.close_connection = True
        self._refuse(401, "invalid_api_key", "missing or wrong api key for this episode's gateway")
        return False

    def _drain(self) -> None:
        self.close_connection = True

    def _refuse(self, status: int, code: str, reason: str, kind: str | None = None) -> None:
        self.server.gateway._refused(status, code, reason, kind)
        kind = {401: "authentication_error", 403: "permission_error"}.get(status, "invalid_request_error")
        self._json(status, {"error": {"message": reason, "type": kind, "code": code, "param": None}},
                   {"x-should-retry": "false"})

    def _json(self, status: int, obj: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.clock.done()
        data = json.dumps(obj, ensure_ascii=False).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            else:  # clients that read the hint (undici) drop the idle connection before it is cut
                self.send_header("Keep-Alive", f"timeout={int(self.clock.idle_s)}")
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the program hung up (killed mid-call): nothing to answer
            self.close_connection = True

    def _sse(self, call: Call, reply: Reply) -> None:
        self.clock.done()
        include_usage = bool((call.request.get("stream_options") or {}).get("include_usage"))  # shape: check_request
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")  # the stream ends with the connection (no chunked framing)
            self.end_headers()
            for chunk in sse_chunks(call.id, self.server.gateway.model, reply, include_usage):
                self.wfile.write(b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    def _sse_events(self, events: list[dict[str, Any]]) -> None:
        """A Responses stream: each event as `event: TYPE` and its JSON `data:` (no [DONE])."""
        self.clock.done()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for e in events:
                self.wfile.write(f"event: {e['type']}\ndata: ".encode() + json.dumps(e, ensure_ascii=False).encode()
                                 + b"\n\n")
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True
