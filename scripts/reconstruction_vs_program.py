"""Our reconstructions next to the real programs they follow, measured on the same tasks.

    python scripts/reconstruction_vs_program.py --tasks 3 --parts prompt,replay,smollm2 --out rvp.json

Pairs: `aider` <-> `aider-cli`, `qwen_code` <-> `qwen-code-cli`, `openhands` <-> `openhands-cli`, and
`mini-swe-agent` alone (a program with no reconstruction here: its row compares programs, it
measures no fidelity). Each program runs as its own harness id (harness/specs/programs), so
it needs its program installed (`harnessrl agents install NAME`). Three parts:

  prompt   the first model call of each side on the first task, as the model sees it (tools
           rendered into the system message as a text model gets them): SmolLM2 tokens with its
           chat template, the roles, which sections are present (system prompt, worked
           examples, the task text, the workspace files' contents) and the tool schemas.
  replay   the oracle's replies under the reconstruction, recorded, then replayed verbatim
           through the program (`--policy replay:`): the same scripted replies -> which files
           changed, and whether their contents match (a unified diff of the first difference).
  smollm2  SmolLM2-135M-Instruct zero-shot, greedy, fp32 on CPU, through each side: outcomes,
           statuses, and the format-error rate each side counts, with Wilson 95% intervals.

Prints a markdown table per part and writes every figure to --out. Outside `make test` (real
programs, a real model).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harnessrl.harness._program_wire import to_text, tools_block
from harnessrl.harness.base import load_spec, make_harness
from harnessrl.policies.base import Action, AgentState, Policy
from harnessrl.policies.registry import make_policy
from harnessrl.rollout.envs import open_env
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.rollout.suites import load_suite

PAIRS = [("aider", "aider-cli"), ("qwen_code", "qwen-code-cli"), ("openhands", "openhands-cli"), ("", "mini-swe-agent")]


def harness_for(name: str, overrides: list[str]) -> Any:
    """Our reconstruction or the real program, by harness id."""
    return make_harness(load_spec(name, overrides))


class FirstCall(Policy):
    """Records the first state each episode shows a model, then answers with nothing."""

    policy_id = "first-call"

    def __init__(self) -> None:
        self.seen: dict[str, AgentState] = {}

    def act(self, states: list[AgentState]) -> list[Action]:
        for s in states:
            self.seen.setdefault(s.episode_key, AgentState(messages=[dict(m) for m in s.messages], harness_id=s.harness_id,
                                                           task_id=s.task_id, turn=s.turn, episode_key=s.episode_key,
                                                           request=s.request))
        return [Action("") for _ in states]


# -- files changed -----------------------------------------------------------------------------

CHANGES: dict[str, dict[str, Any]] = {}


def snapshot(ws: Any) -> dict[str, bytes]:
    out = {}
    for rel in ws.files():
        if not rel.startswith("."):
            try:
                out[rel] = ws.read_bytes(rel)
            except (OSError, ValueError):
                out[rel] = b"<unreadable>"
    return out


def recording_open(tag: str):
    def opener(task: Any, seed: int) -> Any:
        env = open_env(task, seed)
        before = snapshot(env.workspace)
        score = env.score

        def scored():
            after = snapshot(env.workspace)
            CHANGES[f"{tag}|{task.id}"] = {p: (before.get(p), after.get(p)) for p in set(before) | set(after)
                                           if before.get(p) != after.get(p)}
            return score()

        env.score = scored
        return env
    return opener


# -- measures --------------------------------------------------------------------------------------


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def sections(messages: list[dict[str, str]], task: Any, tools: list[str]) -> dict[str, Any]:
    text = "\n".join(m["content"] for m in messages)
    files = [p for p in Path(task.workspace_dir).rglob("*") if p.is_file() and not p.name.startswith(".")] \
        if getattr(task, "workspace_dir", None) else []
    shown = 0
    for p in files:
        line = next((ln.strip() for ln in p.read_text(errors="replace").splitlines() if len(ln.strip()) > 12), "")
        shown += int(bool(line) and line in text)
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=0)
    instruction = task.instruction.strip().splitlines()[0][:60]
    return {
        "roles": ",".join(m["role"][0] for m in messages),
        "system_prompt": bool(messages) and messages[0]["role"] == "system",
        "worked_examples": sum(1 for m in messages[:last_user] if m["role"] == "assistant"),
        "task_text": next((m["role"] for m in messages if instruction in m["content"]), "absent"),
        "files_shown": f"{shown}/{len(files)}",
        "tools": tools,
    }


def prompt_part(tok: Any, pairs: list[tuple[str, str]], task: Any) -> list[dict[str, Any]]:
    rows = []
    for recon, prog in pairs:
        for name in [n for n in (recon, prog) if n]:
            h = harness_for(name, ["max_turns=1"])
            pol = FirstCall()
            t0 = time.time()
            ep = run_group(pol, [RolloutItem(h, task, 0)], run_id="rvp-prompt")[0]
            st = pol.seen.get("0")
            if st is None:
                rows.append({"harness": name, "error": f"no model call ({ep.status}: {ep.metadata.get('stop_reason')} {str(ep.metadata.get('crash', ''))[-300:]})"})
                continue
            if st.request is not None:  # a program: the text model's view (tools in the system message)
                messages = to_text(st.request, {})
                tools = [t["function"]["name"] for t in st.request.get("tools") or []]
                tool_tokens = len(tok(tools_block(st.request["tools"]))["input_ids"]) if tools else 0
            else:
                messages = st.messages
                tools = list(h.spec.tools or getattr(h, "all_tools", ()) or ())
                tool_tokens = None
            ids = tok(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
                      add_special_tokens=False)["input_ids"]
            rows.append({"harness": name, "tokens": len(ids), "tool_schema_tokens": tool_tokens,
                         "messages": len(messages), **sections(messages, task, tools), "wall_s": round(time.time() - t0, 1)})
    return rows


def replay_part(pairs: list[tuple[str, str]], tasks: list[Any], workdir: Path) -> list[dict[str, Any]]:
    rows = []
    for recon, prog in pairs:
        if not recon:
            continue
        oracle_eps = run_group(make_policy("oracle"), [RolloutItem(harness_for(recon, []), t, 0) for t in tasks],
                               run_id="rvp-oracle", open_env=recording_open(recon))
        for task, ep in zip(tasks, oracle_eps):
            path = workdir / f"{recon}-{task.id.replace('/', '_')}.jsonl"
            path.write_text("".join(json.dumps({"content": t.action}) + "\n" for t in ep.turns))
            prog_ep = run_group(make_policy(f"replay:{path}"), [RolloutItem(harness_for(prog, []), task, 0)],
                                run_id="rvp-replay", open_env=recording_open(prog))[0]
            a, b = CHANGES.get(f"{recon}|{task.id}", {}), CHANGES.get(f"{prog}|{task.id}", {})
            first = next((p for p in sorted(set(a) | set(b)) if a.get(p, (None, None))[1] != b.get(p, (None, None))[1]
                          or (p in a) != (p in b)), None)
            diff = ""
            if first is not None:  # a file one side left alone is shown as it began
                x, y = (side.get(first) or (other.get(first) or (None, None))[:1] * 2 for side, other in ((a, b), (b, a)))
                diff = "".join(difflib.unified_diff((x[1] or b"").decode(errors="replace").splitlines(True),
                                                    (y[1] or b"").decode(errors="replace").splitlines(True),
                                                    f"{recon}/{first}", f"{prog}/{first}", n=1))[:600]
            rows.append({"pair": f"{recon}<->{prog}", "task": task.id, "replies": len(ep.turns),
                         "recon_solved": ep.success, "program_solved": prog_ep.success,
                         "recon_files": sorted(a), "program_files": sorted(b), "same_files": sorted(a) == sorted(b),
                         "same_contents": first is None, "program_status": prog_ep.status,
                         "program_calls": len(prog_ep.metadata.get("calls", [])), "first_difference": diff,
                         **observations(ep, prog_ep)})
    return rows


def observations(recon: Any, prog: Any) -> dict[str, Any]:
    """What each side showed the model after the first reply (the second turn's new message)."""
    a = recon.turns[1].observation if len(recon.turns) > 1 else None
    b = prog.turns[1].observation if len(prog.turns) > 1 else None
    return {"recon_observation": (a or "")[:300], "program_observation": (b or "")[:300],
            "same_observation": a == b if a is not None and b is not None else None}


def smollm2_part(model: str, pairs: list[tuple[str, str]], tasks: list[Any], max_turns: int, max_new: int,
                 only: set[str] | None = None) -> list[dict[str, Any]]:
    from harnessrl.policies.lm import LMConfig, LMPolicy

    lm = LMPolicy.from_config(LMConfig(model=model, temperature=0.0, max_new_tokens=max_new, dtype="float32",
                                       device="cpu", prefix_cache_mb=1024))
    rows = []
    for recon, prog in pairs:
        for name in [n for n in (recon, prog) if n and (not only or n in only)]:
            t0 = time.time()
            eps = run_group(lm, [RolloutItem(harness_for(name, [f"max_turns={max_turns}"]), t, 0) for t in tasks],
                            run_id="rvp-smollm2")
            turns = sum(len(e.turns) for e in eps)
            fe = sum(e.format_errors for e in eps)
            solved = sum(e.success for e in eps)
            rows.append({"harness": name, "episodes": len(eps), "solved": solved, "solved_ci": wilson(solved, len(eps)),
                         "outcomes": dict(Counter(e.outcome for e in eps)), "statuses": dict(Counter(e.status for e in eps)),
                         "turns": turns, "format_errors": fe, "format_error_rate": fe / turns if turns else None,
                         "format_error_ci": wilson(fe, turns), "wall_s": round(time.time() - t0, 1)})
            print(json.dumps(rows[-1], default=str), flush=True)  # progress: a run takes minutes per harness
    return rows


def table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.2f}"
        if isinstance(v, (list, tuple)) and v and isinstance(v[0], float):
            return "[" + ", ".join(f"{x:.2f}" for x in v) + "]"
        return str(v).replace("|", "/").replace("\n", " ")[:120]
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join(cell(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=3, help="the first N code-v1 tasks that need no shell")
    ap.add_argument("--parts", default="prompt,replay,smollm2")
    ap.add_argument("--pairs", default="", help="only these pairs, e.g. aider,qwen_code,mini-swe-agent")
    ap.add_argument("--only", default="", help="smollm2: only these harness ids (to split a long run over processes)")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--max-turns", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--out", default="reconstruction_vs_program.json")
    args = ap.parse_args()
    pairs = [p for p in PAIRS if not args.pairs or (p[0] or p[1]) in args.pairs.split(",")]
    tasks = [t for t in load_suite("code-v1").tasks if not t.needs_shell][: args.tasks]
    parts = args.parts.split(",")
    result: dict[str, Any] = {"tasks": [t.id for t in tasks]}
    if "prompt" in parts:
        from harnessrl.models import resolve
        from harnessrl.policies.lm import load_tokenizer

        tok = load_tokenizer(resolve(args.model))
        result["prompt"] = prompt_part(tok, pairs, tasks[0])
        print(table(result["prompt"], ["harness", "tokens", "tool_schema_tokens", "messages", "roles", "system_prompt",
                                        "worked_examples", "task_text", "files_shown", "tools", "error"]), flush=True)
    if "replay" in parts:
        with tempfile.TemporaryDirectory() as d:
            result["replay"] = replay_part(pairs, tasks, Path(d))
        print(table(result["replay"], ["pair", "task", "replies", "recon_solved", "program_solved", "same_files",
                                        "same_contents", "same_observation", "program_status", "program_calls"]), flush=True)
    if "smollm2" in parts:
        result["smollm2"] = smollm2_part(args.model, pairs, tasks, args.max_turns, args.max_new_tokens,
                                         set(filter(None, args.only.split(","))))
        print(table(result["smollm2"], ["harness", "episodes", "solved", "solved_ci", "outcomes", "statuses", "turns",
                                         "format_errors", "format_error_rate", "format_error_ci"]), flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
