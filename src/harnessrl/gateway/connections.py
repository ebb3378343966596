"""Connection limits of a gateway's HTTP server (the gateway's `Limits`, limits.py).

    class _Server(CappedServer): ...        # at most limits.max_connections served at once
    class _Handler(DeadlineHandler): ...    # each request's headers and body within a deadline

`http.server.ThreadingHTTPServer` starts one thread per accepted connection and its handler
reads with a per-recv timeout only. An adversarial program used both: 900 half-open
connections took the host process from 9 to 909 threads, and a client that sends a byte now
and then keeps its thread as long as it likes. Here the cap is checked at accept, before a
thread exists (a connection past it is closed unread), and the reads of each request share one
deadline. http.server's own error answers (garbled request line, too many headers) are counted
as refusals too. All need the server's `gateway` (its `limits`, and `_refused` to count).
"""

from __future__ import annotations

import io
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class CappedServer(ThreadingHTTPServer):
    """A threading HTTP server that serves at most `gateway.limits.max_connections` connections."""

    gateway: Any

    def __init__(self, *args: Any, **kwargs: Any):
        self._open, self._open_lock = 0, threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        # the cap is checked here, before the connection's thread exists: past it the connection
        # is closed unread, so refusing costs no thread
        cap = self.gateway.limits.max_connections
        with self._open_lock:
            admitted = self._open < cap
            self._open += admitted
        if not admitted:
            self.shutdown_request(request)
            self.gateway._refused(503, "too_many_connections", f"more than {cap} connections at once; this one "
                                  "was closed unanswered", "too_many_connections")
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started (the process has none left): the slot is free again
            self._closed_one()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._closed_one()

    def _closed_one(self) -> None:
        with self._open_lock:
            self._open -= 1

    @property
    def open_connections(self) -> int:
        """Connections being served now (each has its thread)."""
        return self._open


class DeadlineReader(io.RawIOBase):
    """A connection's reads, each bounded by what is left of the current request's deadline.

    `expect()` before each request: `idle_s` for its first byte, then `request_s` from that byte
    for the rest (request line, headers, body); `done()` once the body is read (waiting for the
    answer and writing it are no reads: the socket gets `write_s` back). A read past the
    deadline raises TimeoutError, which http.server's handler turns into a closed connection;
    `late` says a request had begun (a slow client, counted as a refusal) rather than the
    connection only idling (closed quietly: clients reopen idle connections as a matter of course)."""

    def __init__(self, sock: socket.socket, idle_s: float, request_s: float, write_s: float):
        self.sock, self.idle_s, self.request_s, self.write_s = sock, idle_s, request_s, write_s
        self.deadline: float | None = None
        self.begun = self.late = False

    def readable(self) -> bool:
        return True

    def expect(self) -> None:
        self.deadline, self.begun, self.late = time.monotonic() + self.idle_s, False, False

    def done(self) -> None:
        if self.deadline is not None:
            self.deadline = None
            self.sock.settimeout(self.write_s)

    def readinto(self, buf: Any) -> int:
        if self.deadline is None:  # a read outside a request (none today): the write timeout bounds it
            return self.sock.recv_into(buf)
        left = self.deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(left)
            n = self.sock.recv_into(buf)
        except TimeoutError:
            self.late = self.begun
            raise TimeoutError(f"request not received within its deadline ({self.request_s:g} s)") from None
        if n and not self.begun:  # the request's first byte: from here it has request_s in all
            self.begun, self.deadline = True, time.monotonic() + self.request_s
        return n


class DeadlineHandler(BaseHTTPRequestHandler):
    """A request handler whose reads go through a DeadlineReader (`self.clock`); a subclass's
    `setup` calls `start_clock()` after the base setup, and `clock.done()` before it writes."""

    timeout = 600  # writes: a program that stops reading its socket frees the thread eventually

    def start_clock(self) -> None:
        limits = self.server.gateway.limits  # type: ignore[attr-defined]
        self.rfile.close()  # the socket's own reader: its reference would keep the fd open after close
        self.clock = DeadlineReader(self.connection, limits.idle_timeout_s, limits.request_timeout_s, self.timeout)
        self.rfile = io.BufferedReader(self.clock)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # http.server's own refusals (a garbled request line, headers too long or too many, HEAD,
        # OPTIONS, ...) are refusals of this episode's program too: counted like the gateway's
        self.clock.done()
        self.server.gateway._refused(  # type: ignore[attr-defined]
            code, "bad_http", f"{message or ''} {explain or ''}".strip(), "bad_http")
        super().send_error(code, message, explain)

    def handle_one_request(self) -> None:
        self.clock.expect()
        super().handle_one_request()  # a read past the deadline raises in it: it closes the connection
        if self.clock.late:
            self.close_connection = True
            self.server.gateway._refused(  # type: ignore[attr-defined]
                408, "request_timeout", f"the request was not received within {self.clock.request_s:g} s; the "
                "connection was closed unanswered", "slow_request")
        self.clock.done()


__all__ = ["CappedServer", "DeadlineHandler", "DeadlineReader"]
