"""A throwaway OpenAI-compatible responder for start-up tests of the real agent programs.

Not the gateway: it answers every `POST /v1/chat/completions` with the next canned reply (or a
fixed error status), streamed as SSE when the request asks for it, and records each request
(path, headers, JSON body) so a test can check what the program sent. It serves a listener the
caller created (e.g. inside an episode's network namespace).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Responder:
    def __init__(self, listener: socket.socket, replies: list[str], *, status: int = 200,
                 error_headers: dict[str, str] | None = None):
        self.replies = list(replies)
        self.status = status
        self.error_headers = error_headers or {}
        self.requests: list[dict] = []
        self._lock = threading.Lock()
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
                if owner.status != 200:
                    return self._json(owner.status, {"error": {"message": "refused by the test responder",
                                                               "type": "invalid_request_error", "code": owner.status}},
                                      owner.error_headers)
                text = owner.replies[min(n, len(owner.replies)) - 1]
                model = body.get("model", "test-model")
                if body.get("stream"):
                    return self._stream(model, text)
                self._json(200, {
                    "id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()), "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})

            def _json(self, status: int, obj: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, model: str, text: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
                chunks = [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None},
                          {"index": 0, "delta": {}, "finish_reason": "stop"}]
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
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
