"""Replay: play assistant messages from a JSONL file, in order, through any harness or program.

    --policy replay:transcript.jsonl

Each line is a JSON object; lines whose `role` is "assistant" (or that have no role) give
their `content`, other lines (system, user, tool) are skipped, so a saved conversation replays
as it is. Every episode plays the same messages from the first; past the last one it answers
with an empty reply (a harness's format error, a program's own handling of an empty answer).
Used for transcripts and tests: a fixed sequence of replies, no model.
"""

from __future__ import annotations

import json
from pathlib import Path

from harnessrl.config import ConfigError
from harnessrl.policies.base import Action, AgentState, Policy


def read_replies(path: str | Path) -> list[str]:
    """The assistant contents of a JSONL file; ConfigError naming the file and line otherwise."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"policy replay: no such file {str(p)!r}; give a JSONL file of assistant messages")
    replies = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as err:
            raise ConfigError(f"policy replay: {p}:{n} is not JSON ({err.msg}); write one object per line") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("content", None), str):
            raise ConfigError(f'policy replay: {p}:{n} needs a "content" string, e.g. {{"role": "assistant", "content": "..."}}')
        if obj.get("role", "assistant") == "assistant":
            replies.append(obj["content"])
    if not replies:
        raise ConfigError(f"policy replay: {p} has no assistant messages")
    return replies


class Replay(Policy):
    def __init__(self, replies: list[str], name: str = "replay"):
        self.replies, self.policy_id = list(replies), name

    def act(self, states: list[AgentState]) -> list[Action]:
        out = []
        for s in states:
            i = s.cache.get("replay", 0)
            s.cache["replay"] = i + 1
            out.append(Action(self.replies[i] if i < len(self.replies) else ""))
        return out


def from_spec(arg: str, options: dict) -> Policy:
    if not arg:
        raise ConfigError("policy replay needs a file: --policy replay:FILE.jsonl")
    if options:
        raise ConfigError(f"policy replay takes no options (got {', '.join(sorted(options))})")
    return Replay(read_replies(arg), f"replay:{Path(arg).name}")
