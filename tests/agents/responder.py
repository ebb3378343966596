"""A throwaway OpenAI-compatible responder for start-up tests of the real agent programs.

Not the gateway: it answers every `POST /v1/chat/completions` with the next canned reply (text,
or a tool call given as {"name", "arguments"}; or a fixed error status), streamed as SSE when the request asks for it, and records each request
(path, headers, JSON body) so a test can check what the program sent. It serves a listener the
caller created (e.g. inside an episode's network namespace).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.helpers import send_json


class Responder:
    def __init__(self, listener: socket.socket, replies: list[str | dict], *, status: int = 200,
                 error_headers: dict[str, str] | None = None, delay_s: float = 0.0):
        self.replies = list(replies)
        self.delay_s = delay_s  # before each answer: a model that is slow, or never answers
        self.status = status
        self.error_headers = error_headers or {}
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                with owner._lock:
                    owner.requests.append({"method": "GET", "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": None})
                self._json(200, {"object": "list", "data": [{"id": "test-model", "object": "model", "owned_by": "test"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with owner._lock:
                    owner.requests.append({"method": "POST", "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                           "body": body, "time": time.monotonic()})
                    n = sum(1 for r in owner.requests if r["method"] == "POST")
                owner._stop.wait(owner.delay_s)
                if owner.status != 200:
                    return self._json(owner.status, {"error": {"message": "refused by the test responder",
                                                               "type": "invalid_request_error", "code": owner.status}},
                                      owner.error_headers)
                reply = owner.replies[min(n, len(owner.replies)) - 1]
                message = {"role": "assistant", "content": reply}
                if isinstance(reply, dict):  # a tool call: {"name": ..., "arguments": {...}}
                    message = {"role": "assistant", "content": None, "tool_calls": [{
                        "id": f"call_{n}", "type": "function",
                        "function": {"name": reply["name"], "arguments": json.dumps(reply["arguments"])}}]}
                finish = "tool_calls" if isinstance(reply, dict) else "stop"
                model = body.get("model", "test-model")
                if body.get("stream"):
                    return self._stream(model, message, finish)
                self._json(200, {
                    "id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()), "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})

            def _json(self, status: int, obj: dict, headers: dict[str, str] | None = None) -> None:
                send_json(self, status, obj, headers)

            def _stream(self, model: str, message: dict, finish: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
                delta = {k: v for k, v in message.items() if v is not None}
                if "tool_calls" in delta:
                    delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta["tool_calls"])]
                chunks = [{"index": 0, "delta": delta, "finish_reason": None},
                          {"index": 0, "delta": {}, "finish_reason": finish}]
                for c in chunks:
                    self.wfile.write(f"data: {json.dumps({**base, 'choices': [c]})}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        self.server = ThreadingHTTPServer(listener.getsockname()[:2], Handler, bind_and_activate=False)
        self.server.socket.close()
        self.server.socket = listener
        self.port = listener.getsockname()[1]
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    @property
    def posts(self) -> list[dict]:
        with self._lock:
            return [r for r in self.requests if r["method"] == "POST"]

    def close(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
