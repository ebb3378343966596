"""What one episode's gateway holds its program to, so that an adversarial program can only end
its own calls, never exhaust the host process or bloat its episode's record (server.py serves
within these).

    limits = Limits(max_connections=16, request_timeout_s=10)   # a bad value: ConfigError naming it
    limits = Limits.from_options(spec.options)                  # options.gateway.* of a program harness
    depth = nesting_depth(raw)       # before json.loads: no recursion, whatever the body
    log = RefusalLog(samples=20)     # per-kind counts, the first 20 refusals kept (reasons truncated)

Each limit answers one attack seen in a red-team round:

- `max_connections` (16): connections served at once. The server has one thread per
  connection; past the cap a new connection is closed at accept, before any thread exists, so
  900 half-open connections cost at most 16 threads, not 900.
- `idle_timeout_s` (30) / `request_timeout_s` (10): a connection gets `idle_timeout_s` for the
  first byte of each request (a new connection and a kept-alive one alike: httpx and undici
  drop idle connections after 4-5 s themselves, and Codex's client reopens one it finds closed)
  and then `request_timeout_s` for the rest of the request line, the headers and the body, in
  total. A per-recv timeout would let a client that sends one byte a second hold a thread for
  ever; this is a deadline.
- `max_request_bytes` (4 MiB): checked on the Content-Length, before a byte of the body is read.
- `max_depth` (64): JSON nesting, counted on the bytes without recursion before `json.loads`
  (which recurses, and a 200,000-deep array ends it with RecursionError; the stdlib decoder gives
  up near 1,000). A request nests a few levels plus its tools' JSON schemas: 64 leaves room.
- `max_messages` (10,000) / `max_tools` (512): entries of `messages` (Responses: `input`) and
  `tools`, so the work a call makes downstream (rendering, records) stays bounded.
- `refusal_samples` (20): refusals are kept as counts per kind plus the first N, each reason cut
  to `REASON_CHARS`; 5,000 bad-key calls are one count, not 5,000 records.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, fields
from itertools import accumulate
from typing import Any

from harnessrl.config import ConfigError

REASON_CHARS = 300
# refusal kinds by the wire code they answer with; the limits add their own (too_deep, too_many,
# no_length, slow_request, too_many_connections, bad_http)
KIND_OF_CODE = {"invalid_api_key": "bad_key", "context_length_exceeded": "too_large", "budget_exceeded": "over_budget",
                "episode_ended": "episode_ended", "not_found": "not_found", "method_not_allowed": "bad_method",
                "invalid_request_error": "malformed"}


@dataclass(frozen=True, slots=True)
class Limits:
    """The gateway's limits (module docstring); every field is checked when made."""

    max_request_bytes: int = 4 << 20
    max_connections: int = 16
    request_timeout_s: float = 10.0
    idle_timeout_s: float = 30.0
    max_depth: int = 64
    max_messages: int = 10_000
    max_tools: int = 512
    refusal_samples: int = 20

    def __post_init__(self) -> None:
        check_limits({f.name: getattr(self, f.name) for f in fields(self)}, "gateway ")

    @classmethod
    def from_options(cls, options: Any) -> "Limits":
        """A program harness's `options.gateway` table (and its older flat `options.max_request_bytes`)."""
        table = options.get("gateway") or {}
        if not isinstance(table, dict):
            raise ConfigError(f"options.gateway={table!r}: a table of gateway limits, e.g. {{max_connections = 16}}")
        known = {f.name for f in fields(cls)}
        for key in table:
            if key not in known:
                raise ConfigError(f"options.gateway.{key}: not a gateway limit; choose from {', '.join(sorted(known))}")
        values = dict(table)
        if "max_request_bytes" in options and "max_request_bytes" not in values:
            check_limits({"max_request_bytes": options["max_request_bytes"]}, "options.")
            values["max_request_bytes"] = options["max_request_bytes"]
        check_limits(values, "options.gateway.")
        return cls(**values)


def check_limits(values: dict[str, Any], prefix: str) -> None:
    """A one-line ConfigError naming the first field that is not a positive integer / number."""
    for name, v in values.items():
        seconds = name.endswith("_s")
        if isinstance(v, bool) or not isinstance(v, (int, float) if seconds else int):
            raise ConfigError(f"{prefix}{name}={v!r}: must be {'a number of seconds' if seconds else 'an integer'} > 0")
        if v <= 0 or (seconds and not math.isfinite(v)):
            raise ConfigError(f"{prefix}{name}={v!r}: must be > 0{' and finite' if seconds else ''}")


# -- nesting depth, without recursion ---------------------------------------------------------------

# a JSON string, escapes included; possessive, and an unterminated one runs to the end, so every
# match attempt consumes what it scans and the whole scan is linear (a pattern that can fail
# after scanning would be tried again from each later quote: quadratic on `"\"\"\"...`)
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = tuple(1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256))


def nesting_depth(raw: bytes) -> int:
    """The deepest `[`/`{` nesting of a JSON text, outside strings (malformed text: some number;
    json.loads refuses it next). Linear in the size, no recursion: safe before parsing."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def no_constants(name: str) -> float:
    """json.loads' parse_constant: NaN and Infinity are not JSON (and not JSON the records can write)."""
    raise ValueError(f"{name} is not a JSON value")


# -- refusals: counts and a bounded sample ------------------------------------------------------------


@dataclass(slots=True)
class Refusal:
    status: int
    code: str
    reason: str
    at: float
    kind: str = ""  # the count it adds to (KIND_OF_CODE, or a limit's own)


class RefusalLog:
    """Every refusal counted by kind; the first `samples` kept, each reason cut to REASON_CHARS."""

    def __init__(self, samples: int):
        self.samples = samples
        self.counts: Counter[str] = Counter()
        self.sample: list[Refusal] = []
        self._lock = threading.Lock()

    def add(self, status: int, code: str, reason: str, kind: str | None = None) -> bool:
        """Count one refusal; True when it was also kept in the sample (the caller logs those loudly)."""
        kind = kind or KIND_OF_CODE.get(code, code)
        if len(reason) > REASON_CHARS:
            reason = reason[:REASON_CHARS] + f"... ({len(reason)} chars)"
        with self._lock:
            self.counts[kind] += 1
            if len(self.sample) >= self.samples:
                return False
            self.sample.append(Refusal(status, code, reason, time.time(), kind))
            return True

    def snapshot(self) -> tuple[list[Refusal], dict[str, int]]:
        """Copies of the sample and the counts, taken under the lock (HTTP threads add meanwhile)."""
        with self._lock:
            return list(self.sample), dict(self.counts)


__all__ = ["Limits", "Refusal", "RefusalLog", "check_limits", "nesting_depth", "no_constants"]
