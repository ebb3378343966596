"""Builders shared by tests: synthetic episodes with every field set."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import numpy as np

from harnessrl.episode import Context, Episode, Turn


def make_episode(i: int, turns: int = 3, tokens: int = 7, rng: np.random.Generator | None = None) -> Episode:
    rng = rng or np.random.default_rng(i)
    return Episode(
        context=Context(task_id=f"task-{i % 5}", harness_id=["aider", "swe_agent", "openhands"][i % 3],
                        env_id="code-v1", level=i % 4, seed=i),
        turns=[
            Turn(
                observation=f"obs {i}.{j} — ünïcødé ✓ 你好",
                action=f"<answer>{i * j}</answer>",
                token_ids=rng.integers(0, 50_000, tokens),
                logprobs=-rng.random(tokens).astype(np.float32),
                loss_mask=(rng.random(tokens) < 0.5).astype(np.int8),
                tool_call='{"tool": "bash", "args": {"command": "ls"}}',
                tool_result="file.py\n",
                status="ok" if j else "format_error",
                reward=float(j == turns - 1),
                wall_time=0.01 * j,
            )
            for j in range(turns)
        ],
        reward=float(i % 2),
        raw_reward=1.0 if i % 2 else -1.0,
        success=bool(i % 2),
        outcome="solved" if i % 2 else "dropped_requirement",
        status="ok",
        policy_id="oracle",
        run_id="run-a",
        skill_version="skill@1",
        tokens_in=100 + i,
        tokens_out=20 + i,
        format_errors=1,
        wall_time=1.5,
        metadata={"note": "ключ", "nested": {"k": [1, 2]}},
    )


def send_json(handler: BaseHTTPRequestHandler, status: int, obj: dict, headers: dict[str, str] | None = None) -> None:
    """Answer an HTTP request with a JSON body (the test endpoints that stand in for a model provider)."""
    data = json.dumps(obj).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)
