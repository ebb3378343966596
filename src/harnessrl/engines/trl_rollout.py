"""harnessrl episodes as TRL rollouts: `GRPOTrainer(rollout_func=HarnessRollout(...))`.

TRL hands `rollout_func` the prompts of this process's share of a generation batch: each dataset
row repeated `num_generations` times in a row, the processes holding consecutive slices. A
prompt here is a small JSON key naming the row (`{"task": ..., "harness": ...}`), so the rollout
knows which task and harness each copy is for:

  global index  i = rank x (prompts per process) + position;  group member k = i mod num_generations
  within        the row names its harness
  cross         the row names only the task; member k goes to harness k mod H (the group spreads
                evenly over the task's harnesses)

Each copy becomes one harnessrl episode (run_group: the whole share in one lockstep group, a
batched generation per turn) and then one TRL row:

  prompt_ids      the tokens before the first generated token (system prompt + task)
  completion_ids  everything after: every turn's generation and the observations between them
  env_mask        1 on generated tokens, 0 on observation tokens (TRL trains on mask 1 only)
  logprobs        the behaviour log-probs (0 on observation tokens)
  harnessrl_*     extra fields TRL hands to `harness_reward` (the verifier's reward, outcome stats)

One TRL row is one sequence. An episode whose harness rewrote history has several training rows
natively (train/sequences.py); here its last row is trained (the kept prefix is context, mask 0)
and the count of rows left out is recorded in the episode's metadata (`trl_rows_dropped`).

Every episode is written to the record store with the native schema; `metadata.engine = "trl"`,
`update` = TRL's global step, `rank`. Ranks send their episodes to the main process, which alone
appends (one writer, no lost or doubled episodes); ids are (run, step, global index), so a step
replayed after a resume is not written twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from harnessrl.rewards import RewardHook
from harnessrl.rewards import apply as apply_rewards
from harnessrl.episode import Episode
from harnessrl.harness.base import Harness
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.records import RecordStore
from harnessrl.rollout.loop import RolloutItem, run_group, task_id_of
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.sequences import episode_rows


# ----------------------------------------------------------------------------------------
# Rows


def row_prompt(task_id: str, harness_id: str | None) -> str:
    """The dataset `prompt` of one row: a JSON key (readable in TRL's completion logs)."""
    return json.dumps({"task": task_id, "harness": harness_id}, sort_keys=True)


def dataset_rows(task_ids: list[str], harness_ids: list[str], grouping: str) -> list[dict[str, str]]:
    """within: a row per (task, harness); cross: a row per task."""
    if grouping == "within":
        return [{"prompt": row_prompt(t, h)} for t in task_ids for h in harness_ids]
    return [{"prompt": row_prompt(t, None)} for t in task_ids]


@dataclass(frozen=True, slots=True)
class Assigned:
    """One rollout slot of a generation batch."""

    task_id: str
    harness_id: str
    index: int  # global index in the generation batch
    member: int  # position in its TRL group (index mod num_generations)


def assign(prompts: list[Any], offset: int, num_generations: int, harness_ids: list[str]) -> list[Assigned]:
    """The (task, harness) of each prompt copy of this process (offset = its first global index)."""
    out = []
    for i, prompt in enumerate(prompts):
        key = json.loads(prompt)
        g = offset + i
        k = g % num_generations
        out.append(Assigned(key["task"], key["harness"] or harness_ids[k % len(harness_ids)], g, k))
    return out


# ----------------------------------------------------------------------------------------
# Episode -> TRL row


@dataclass(slots=True)
class TRLRow:
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    env_mask: list[int]
    rows_dropped: int


def episode_to_row(ep: Episode, filler_id: int) -> TRLRow:
    """Split an episode's (last) training row at its first generated token.

    An episode with no generated token (its environment failed to start, or the first prompt
    already filled the window) still needs a row — its reward is part of the group's baseline:
    it gets one filler token with env_mask 0, so nothing of it is trained.
    """
    rows = episode_rows(ep) if ep.turns else []
    if not rows:
        prompt = [int(x) for x in np.concatenate([t.token_ids for t in ep.turns])] if ep.turns else []
        return TRLRow(prompt or [filler_id], [filler_id], [0.0], [0], 0)
    row = rows[-1]
    first = int(np.argmax(row.mask))
    return TRLRow([int(x) for x in row.ids[:first]], [int(x) for x in row.ids[first:]],
                  [float(x) for x in row.behaviour[first:]], [int(x) for x in row.mask[first:]], len(rows) - 1)


def harness_reward(prompts: list[Any], completions: list[Any], harnessrl_reward: list[float], **kwargs: Any) -> list[float]:
    """TRL reward function: the verifier's reward of each episode (computed during the rollout)."""
    log = kwargs.get("log_metric")
    if log is not None:
        for key in ("success", "format_errors", "turns"):
            values = kwargs.get(f"harnessrl_{key}")
            if values:
                log(f"harnessrl/{key}", float(np.mean(values)))
    return [float(r) for r in harnessrl_reward]


# ----------------------------------------------------------------------------------------
# The rollout function


def seed_for(seed: int, step: int, stream: int) -> int:
    """A 63-bit seed from (seed, step, stream): independent streams without shared state."""
    return int(np.random.SeedSequence([seed, step + 1, stream]).generate_state(2, np.uint32).view(np.uint64)[0] >> 1)


Collect = Callable[[list[Assigned], Any, int], list[Episode]]


class HarnessRollout:
    """TRL `rollout_func`: runs this process's share of a generation batch as harnessrl episodes."""

    def __init__(self, *, policy_cfg: LMConfig, tokenizer: Any, tasks: list[TaskLike], harnesses: list[Harness],
                 num_generations: int, store: RecordStore | str, run_id: str, seed: int = 0,
                 open_env: Callable[[Any, int], Any] | None = None, collect: Collect | None = None,
                 rewards: RewardHook | None = None):
        from harnessrl.rollout.envs import open_env as default_open_env

        self.policy_cfg, self.tokenizer, self.run_id, self.seed = policy_cfg, tokenizer, run_id, seed
        self.tasks = {task_id_of(t): t for t in tasks}
        self.harnesses = {h.id: h for h in harnesses}
        self.harness_ids = [h.id for h in harnesses]
        self.num_generations = num_generations
        self.store_path = store
        self._store: RecordStore | None = store if isinstance(store, RecordStore) else None
        self.open_env = open_env or default_open_env
        self.collect = collect or self.generate
        self.rewards = rewards or RewardHook()  # reward_funcs on top of the verifier, on this (host) process
        eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.pad_token_id
        self.filler_id = int(eos)
        self.last_episodes: list[Episode] = []  # this process's episodes of the last call (tests, benchmarks)

    # TRL calls rollout_func(prompts, trainer)
    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list]:
        acc = trainer.accelerator
        step = int(trainer.state.global_step)
        offset = acc.process_index * len(prompts)
        slots = assign(prompts, offset, self.num_generations, self.harness_ids)
        episodes = apply_rewards(self.rewards, self.collect(slots, trainer, step))
        prefix = f"{self.run_id}-u{step:05d}-"
        out: dict[str, list] = {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "harnessrl_reward",
                                                "harnessrl_success", "harnessrl_format_errors", "harnessrl_turns",
                                                "harnessrl_episode_id")}
        for slot, ep in zip(slots, episodes, strict=True):
            row = episode_to_row(ep, self.filler_id)
            ep.episode_id = f"{prefix}{slot.index:05d}"
            ep.run_id = self.run_id
            ep.metadata.update({"engine": "trl", "update": step, "temperature": self.policy_cfg.temperature,
                                "rank": acc.process_index, "world_size": acc.num_processes,
                                "trl_group": slot.index // self.num_generations, "trl_member": slot.member})
            if row.rows_dropped:
                ep.metadata["trl_rows_dropped"] = row.rows_dropped
            out["prompt_ids"].append(row.prompt_ids)
            out["completion_ids"].append(row.completion_ids)
            out["logprobs"].append(row.logprobs)
            out["env_mask"].append(row.env_mask)
            out["harnessrl_reward"].append(float(ep.reward))
            out["harnessrl_success"].append(float(ep.success))
            out["harnessrl_format_errors"].append(float(ep.format_errors))
            out["harnessrl_turns"].append(float(ep.num_turns))
            out["harnessrl_episode_id"].append(ep.episode_id)
        self.last_episodes = episodes
        self._write(episodes, acc, prefix)
        return out

    def _write(self, episodes: list[Episode], acc: Any, prefix: str) -> None:
        """Every rank's episodes reach the main process, which appends the ones not already stored."""
        if acc.num_processes > 1:
            from accelerate.utils import gather_object

            episodes = gather_object(episodes)
        if not acc.is_main_process:
            return
        if self._store is None:
            self._store = RecordStore(self.store_path)
        stored = set(self._store.sql("SELECT episode_id FROM episodes WHERE run_id = ? AND episode_id LIKE ?",
                                     [self.run_id, prefix + "%"]).column("episode_id").to_pylist())
        fresh = [e for e in episodes if e.episode_id not in stored]
        if fresh:
            self._store.append(fresh)

    # -- generation ----------------------------------------------------------------------

    def generate(self, slots: list[Assigned], trainer: Any, step: int) -> list[Episode]:
        """Run the slots to their stop rules, sampling from the weights being trained."""
        rank = trainer.accelerator.process_index
        items = [RolloutItem(self.harnesses[s.harness_id], self.tasks[s.task_id],
                             int(seed_for(self.seed, step, 10_000 + s.index) % 2**31)) for s in slots]
        with self._policy(trainer) as policy:
            policy.reseed(seed_for(self.seed, step, 1 + rank))
            key = f"u{step:05d}-r{rank}-"  # no run id: the same seed samples the same tokens in any run folder
            episodes = run_group(policy, items, run_id=self.run_id, key_prefix=key, open_env=self.open_env)
            drain = getattr(policy.engine, "drain", None)
            if drain is not None:  # vLLM server mode: stay in the ranks' lockstep rounds until all are done
                drain()
            for i, ep in enumerate(episodes):
                resets = policy.pop_resets(f"{key}{i}")
                if resets:
                    ep.metadata["context_resets"] = [list(r) for r in resets]
        return episodes

    @contextmanager
    def _policy(self, trainer: Any) -> Iterator[LMPolicy]:
        """An LMPolicy around the trainer's model: its own weights (gathered under ZeRO-3), or its vLLM."""
        from trl.models.utils import unwrap_model_for_generation

        if trainer.args.use_vllm:
            from harnessrl.engines.trl_vllm import VLLMEngine

            model = trainer.accelerator.unwrap_model(trainer.model)
            yield LMPolicy(model, self.tokenizer, self.policy_cfg, engine=VLLMEngine(trainer))
            return
        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                         gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                                         gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs) as model:
            yield LMPolicy(model, self.tokenizer, self.policy_cfg)
