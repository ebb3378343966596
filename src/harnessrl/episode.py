"""Turn, Episode, Context: the one record type every stage of harnessrl shares.

An `Episode` is what one rollout of (policy x harness x task x seed) produced. Rollouts,
training, evaluation and analysis exchange nothing else. The Arrow schema below is the
on-disk form; it is defined once here and versioned by `SCHEMA_VERSION`.

Token arrays are numpy arrays (int32 ids, float32 log-probs, int8 loss mask) so that a
store of millions of episodes can be written without per-token Python objects.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

SCHEMA_VERSION = 2
#: Versions this harnessrl reads: 1 (no `messages` column; its episodes read with messages=[]) and 2.
READABLE_VERSIONS = (1, 2)

#: Episode statuses. `ok` = the episode ran to its stop rule; the others say why it did not.
STATUSES = ("ok", "format_error", "timeout", "turn_limit", "token_limit", "sandbox_violation", "crash")
#: Turn statuses: a turn's action either ran (`ok`) or became an error observation.
TURN_STATUSES = ("ok", "format_error", "tool_error", "timeout", "blocked", "sandbox_violation")


@dataclass(slots=True)
class Context:
    """What an episode was collected under. Grouping rules, critics and analyses key on this.

    Agents: (task_id, harness_id). Classic RL: env_id plus an integer context/level index.
    """

    task_id: str = ""
    harness_id: str = ""
    env_id: str = ""
    level: int | None = None
    seed: int | None = None


def _ints(x: Any) -> np.ndarray:
    return np.asarray([] if x is None else x, dtype=np.int32)


def _floats(x: Any) -> np.ndarray:
    return np.asarray([] if x is None else x, dtype=np.float32)


def _mask(x: Any) -> np.ndarray:
    return np.asarray([] if x is None else x, dtype=np.int8)


@dataclass(slots=True)
class Turn:
    """One policy step: what the policy saw, what it emitted, what the tools returned.

    token_ids covers this turn's new tokens (observation tokens appended to the history, then
    the generated action tokens); loss_mask is 1 exactly on generated tokens; logprobs aligns
    with token_ids (0 where the mask is 0). All three are empty for non-LM policies.
    """

    observation: str = ""
    action: str = ""
    token_ids: np.ndarray = field(default_factory=lambda: _ints(None))
    logprobs: np.ndarray = field(default_factory=lambda: _floats(None))
    loss_mask: np.ndarray = field(default_factory=lambda: _mask(None))
    tool_call: str = ""  # the parsed action(s), JSON text; "" when nothing parsed
    tool_result: str = ""  # what the tools returned (the next observation's source)
    status: str = "ok"
    reward: float = 0.0
    wall_time: float = 0.0

    def __post_init__(self) -> None:
        self.token_ids = _ints(self.token_ids)
        self.logprobs = _floats(self.logprobs)
        self.loss_mask = _mask(self.loss_mask)
        if not (len(self.token_ids) == len(self.logprobs) == len(self.loss_mask)):
            # An empty logprob array with tokens is allowed for policies that give no log-probs.
            if len(self.logprobs) == 0 and len(self.loss_mask) == len(self.token_ids):
                self.logprobs = np.zeros(len(self.token_ids), dtype=np.float32)
            else:
                raise ValueError(
                    f"Turn arrays must align: token_ids={len(self.token_ids)}, "
                    f"logprobs={len(self.logprobs)}, loss_mask={len(self.loss_mask)}"
                )
        if self.status not in TURN_STATUSES:
            raise ValueError(f"Turn.status={self.status!r}; allowed: {', '.join(TURN_STATUSES)}")


@dataclass(slots=True)
class Episode:
    """One rollout, start to stop rule, with its verdict."""

    context: Context
    turns: list[Turn] = field(default_factory=list)
    reward: float = 0.0
    raw_reward: float | None = None  # undiscounted reward where the env discounts (MiniWoB)
    success: bool = False
    outcome: str = ""  # a label: "solved", "dropped_requirement", "wrong_object", ...
    status: str = "ok"
    policy_id: str = ""
    run_id: str = ""
    skill_version: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    format_errors: int = 0
    wall_time: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)
    episode_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # the whole conversation as the policy saw it, system prompt first ({"role", "content"} dicts, TRL's
    # conversational format): `records export --format sft` writes it as is, with no re-rendering
    messages: list[dict[str, str]] = field(default_factory=list)
    # the agent's workspace files as the episode ended ({path: text}, read on the host before grading), for
    # reward functions (harnessrl.rewards) only: never stored, exported or compared, and dropped once they ran
    final_files: dict[str, str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Episode.status={self.status!r}; allowed: {', '.join(STATUSES)}")

    @property
    def num_turns(self) -> int:
        return len(self.turns)


# ----------------------------------------------------------------------------------------
# Arrow schema, defined once. Episode-level scalars are top-level columns so that DuckDB
# queries (solve rate by task x harness) read a few small columns and never the turns.

TURN_TYPE = pa.struct(
    [
        ("observation", pa.string()),
        ("action", pa.string()),
        ("token_ids", pa.list_(pa.int32())),
        ("logprobs", pa.list_(pa.float32())),
        ("loss_mask", pa.list_(pa.int8())),
        ("tool_call", pa.string()),
        ("tool_result", pa.string()),
        ("status", pa.string()),
        ("reward", pa.float64()),
        ("wall_time", pa.float64()),
    ]
)

SCHEMA = pa.schema(
    [
        ("episode_id", pa.string()),
        ("run_id", pa.string()),
        ("policy_id", pa.string()),
        ("task_id", pa.string()),
        ("harness_id", pa.string()),
        ("env_id", pa.string()),
        ("level", pa.int64()),
        ("seed", pa.int64()),
        ("skill_version", pa.string()),
        ("reward", pa.float64()),
        ("raw_reward", pa.float64()),
        ("success", pa.bool_()),
        ("outcome", pa.string()),
        ("status", pa.string()),
        ("tokens_in", pa.int64()),
        ("tokens_out", pa.int64()),
        ("num_turns", pa.int32()),
        ("format_errors", pa.int32()),
        ("wall_time", pa.float64()),
        ("metadata", pa.string()),  # JSON text: free-form, never needed by queries' hot paths
        ("messages", pa.string()),  # JSON text: the conversation (schema 2; null in schema-1 shards)
        ("turns", pa.list_(TURN_TYPE)),
    ],
    metadata={"harnessrl.schema_version": str(SCHEMA_VERSION)},
)
#: The schema of version-1 shards (no `messages`): still read; the store's dataset fills the column with null.
SCHEMA_V1 = SCHEMA.remove(SCHEMA.get_field_index("messages")).with_metadata({"harnessrl.schema_version": "1"})


def is_episode_schema(schema: pa.Schema) -> bool:
    """A shard this harnessrl reads: the current schema or a version-1 one."""
    return schema.equals(SCHEMA, check_metadata=False) or schema.equals(SCHEMA_V1, check_metadata=False)


def _list_array(arrays: list[np.ndarray], dtype: np.dtype, pa_type: pa.DataType) -> pa.Array:
    """Build a list<pa_type> array from numpy arrays through offsets (no per-element Python)."""
    lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
    offsets = np.zeros(len(arrays) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, type=pa_type))


def to_arrow(episodes: list[Episode]) -> pa.Table:
    """Episodes -> one Arrow table with `SCHEMA`."""
    turns = [t for e in episodes for t in e.turns]
    turn_struct = pa.StructArray.from_arrays(
        [
            pa.array([t.observation for t in turns], pa.string()),
            pa.array([t.action for t in turns], pa.string()),
            _list_array([t.token_ids for t in turns], np.int32, pa.int32()),
            _list_array([t.logprobs for t in turns], np.float32, pa.float32()),
            _list_array([t.loss_mask for t in turns], np.int8, pa.int8()),
            pa.array([t.tool_call for t in turns], pa.string()),
            pa.array([t.tool_result for t in turns], pa.string()),
            pa.array([t.status for t in turns], pa.string()),
            pa.array([t.reward for t in turns], pa.float64()),
            pa.array([t.wall_time for t in turns], pa.float64()),
        ],
        fields=list(TURN_TYPE),
    )
    offsets = np.zeros(len(episodes) + 1, dtype=np.int32)
    np.cumsum([len(e.turns) for e in episodes], out=offsets[1:])
    turns_col = pa.ListArray.from_arrays(pa.array(offsets), turn_struct)
    c = [e.context for e in episodes]
    columns = {
        "episode_id": [e.episode_id for e in episodes],
        "run_id": [e.run_id for e in episodes],
        "policy_id": [e.policy_id for e in episodes],
        "task_id": [x.task_id for x in c],
        "harness_id": [x.harness_id for x in c],
        "env_id": [x.env_id for x in c],
        "level": [x.level for x in c],
        "seed": [x.seed for x in c],
        "skill_version": [e.skill_version for e in episodes],
        "reward": [float(e.reward) for e in episodes],
        "raw_reward": [None if e.raw_reward is None else float(e.raw_reward) for e in episodes],
        "success": [bool(e.success) for e in episodes],
        "outcome": [e.outcome for e in episodes],
        "status": [e.status for e in episodes],
        "tokens_in": [int(e.tokens_in) for e in episodes],
        "tokens_out": [int(e.tokens_out) for e in episodes],
        "num_turns": [len(e.turns) for e in episodes],
        "format_errors": [int(e.format_errors) for e in episodes],
        "wall_time": [float(e.wall_time) for e in episodes],
        "metadata": [json.dumps(e.metadata, ensure_ascii=False, sort_keys=True) for e in episodes],
        "messages": [json.dumps(e.messages, ensure_ascii=False) for e in episodes],
    }
    arrays = [pa.array(columns[f.name], f.type) for f in SCHEMA if f.name != "turns"]
    return pa.Table.from_arrays([*arrays, turns_col], schema=SCHEMA)


def from_arrow(table: pa.Table) -> list[Episode]:
    """Arrow table with `SCHEMA` (or a column subset containing `turns`) -> Episodes."""
    cols = {name: table.column(name).to_pylist() for name in table.column_names if name != "turns"}
    turns_col = table.column("turns").combine_chunks()
    # Offsets are absolute into the unsliced child arrays, so index them directly.
    ep_offsets = turns_col.offsets.to_numpy()
    lo, hi = int(ep_offsets[0]), int(ep_offsets[-1])
    child = dict(zip([f.name for f in TURN_TYPE], turns_col.values.flatten()))

    def arrays(name: str, dtype: type) -> list[np.ndarray]:
        lists = child[name]
        values = lists.values.to_numpy(zero_copy_only=False).astype(dtype, copy=False)
        offs = lists.offsets.to_numpy()
        return [values[offs[i] : offs[i + 1]] for i in range(lo, hi)]

    ids, lps, masks = arrays("token_ids", np.int32), arrays("logprobs", np.float32), arrays("loss_mask", np.int8)
    names = ("observation", "action", "tool_call", "tool_result", "status", "reward", "wall_time")
    scalar = {n: child[n].slice(lo, hi - lo).to_pylist() for n in names}
    all_turns = [
        Turn(
            observation=scalar["observation"][i],
            action=scalar["action"][i],
            token_ids=ids[i],
            logprobs=lps[i],
            loss_mask=masks[i],
            tool_call=scalar["tool_call"][i],
            tool_result=scalar["tool_result"][i],
            status=scalar["status"][i],
            reward=scalar["reward"][i],
            wall_time=scalar["wall_time"][i],
        )
        for i in range(hi - lo)
    ]
    ep_offsets = ep_offsets - lo
    messages = cols.get("messages") or [None] * table.num_rows  # absent or null: a schema-1 shard
    out = []
    for i in range(table.num_rows):
        out.append(
            Episode(
                context=Context(
                    task_id=cols["task_id"][i],
                    harness_id=cols["harness_id"][i],
                    env_id=cols["env_id"][i],
                    level=cols["level"][i],
                    seed=cols["seed"][i],
                ),
                turns=all_turns[ep_offsets[i] : ep_offsets[i + 1]],
                reward=cols["reward"][i],
                raw_reward=cols["raw_reward"][i],
                success=cols["success"][i],
                outcome=cols["outcome"][i],
                status=cols["status"][i],
                policy_id=cols["policy_id"][i],
                run_id=cols["run_id"][i],
                skill_version=cols["skill_version"][i],
                tokens_in=cols["tokens_in"][i],
                tokens_out=cols["tokens_out"][i],
                format_errors=cols["format_errors"][i],
                wall_time=cols["wall_time"][i],
                metadata=json.loads(cols["metadata"][i]) if cols["metadata"][i] else {},
                episode_id=cols["episode_id"][i],
                messages=json.loads(messages[i]) if messages[i] else [],
            )
        )
    return out
