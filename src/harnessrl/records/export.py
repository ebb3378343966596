"""One stored episode as other tools read it: a JSON object (`records export`, sealed evaluations) and
the chat messages an SFT step trains on."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from harnessrl.episode import Episode


def sft_messages(ep: Episode) -> list[dict[str, str]]:
    """The stored conversation, ending with the policy's last reply (a trailing observation teaches nothing);
    [] for an episode that stores none (record schema 1) or where the policy never replied."""
    msgs = [{"role": m["role"], "content": m["content"]} for m in ep.messages]
    while msgs and msgs[-1]["role"] != "assistant":
        msgs.pop()
    return msgs


def episode_to_json(ep: Episode) -> dict[str, Any]:
    d = {k: getattr(ep, k) for k in Episode.__slots__ if k not in ("context", "turns", "final_files")}
    d["context"] = asdict(ep.context)
    d["num_turns"] = ep.num_turns
    d["turns"] = [
        {
            k: (v.tolist() if hasattr(v, "tolist") else v)
            for k, v in ((s, getattr(t, s)) for s in t.__slots__)
        }
        for t in ep.turns
    ]
    return d
