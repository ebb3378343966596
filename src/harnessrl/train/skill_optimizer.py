"""A skill optimizer baseline: propose a rewrite, evaluate it, keep it if the acceptance rule says so.

One lineage, greedy, as GEPA's inner loop (without its Pareto front):

    current = seed skill                       (validation rules: evaluate it on the validation tasks)
    for each iteration:
        minibatch = `minibatch_size` train tasks drawn without replacement
        evaluate current on the minibatch      (fresh rollout seeds; its episodes feed the rewriter)
        candidate = propose(current)           a mutation operator, or an LLM rewrite through any Policy
        evaluate candidate                     minibatch rules: the same tasks, its own seeds
                                               validation rules: the validation tasks
        accept by the rule (harnessrl.evaluate.acceptance); if accepted, current = candidate

Rollout seeds of the parent and the candidate are independent by default, as when an LLM
samples each evaluation afresh; `paired_seeds` gives both the same seeds (common random
numbers), a cheap control that removes the selection effect for seed-driven noise.

Everything is written down (harnessrl.evaluate.skill_runs): every episode to the record store
with metadata {run, candidate, parent, role, iteration, evaluation}, and every candidate
(full text), evaluation (tasks, seeds, episode ids, scores) and decision to the hash-chained
`optimizer_log.jsonl` in the run directory. `harnessrl bipa audit RUN` replays from these.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from pydantic import Field, field_validator, model_validator

from harnessrl.config import Config, ConfigError
from harnessrl.episode import Episode
from harnessrl.evaluate.acceptance import AcceptanceConfig, decide
from harnessrl.evaluate.skill_runs import SkillLogWriter, derive_seed, run_skill
from harnessrl.harness.base import HarnessSpec
from harnessrl.harness.skills import MUTATIONS, Skill, SkillSection, mutate, parse_skill
from harnessrl.policies.base import AgentState, Policy
from harnessrl.rollout.envs import open_env as default_open_env
from harnessrl.rollout.suites import task_id
from harnessrl.train.metrics import REPORT_TO_HELP, ReportTo, Trackers
from harnessrl.tasks.contract import TaskLike


class ProposerConfig(Config):
    """How candidates are made."""

    operators: list[str] = Field(
        default_factory=lambda: ["rephrase", "add_section", "drop_section", "reorder_sections", "duplicate_section"],
        description=f"Mutation operators drawn uniformly; allowed: {', '.join(MUTATIONS)}.")
    llm_share: float = Field(0.0, ge=0, le=1, description="Share of iterations proposed by an LLM rewrite (needs a rewriter policy).")
    pool: list[list[str]] = Field(default_factory=list, description="Sections add_section draws from: [[id, title, text], ...]; empty = built-in advice.")

    @field_validator("operators")
    @classmethod
    def _known(cls, ops: list[str]) -> list[str]:
        bad = [o for o in ops if o not in MUTATIONS]
        if bad:
            raise ValueError(f"unknown operators {bad}; allowed: {', '.join(MUTATIONS)}")
        return ops

    @model_validator(mode="after")
    def _something_proposes(self) -> "ProposerConfig":
        if not self.operators and self.llm_share < 1:
            raise ValueError("give at least one operator, or llm_share = 1")
        return self

    def section_pool(self) -> list[SkillSection]:
        return [SkillSection(*row) for row in self.pool]


class SkillOptimizerConfig(Config):
    run_id: str = Field("", description="Optimizer run id (default: skillopt-<time>-<random>).")
    iterations: int = Field(8, ge=1, description="Candidates proposed (one per iteration).")
    acceptance: AcceptanceConfig = Field(default_factory=AcceptanceConfig)
    proposer: ProposerConfig = Field(default_factory=ProposerConfig)
    paired_seeds: bool = Field(False, description="Parent and candidate minibatch rollouts share seeds (common random numbers).")
    seed: int = Field(0, description="Seeds minibatch draws, operators and every rollout seed.")
    report_to: ReportTo = Field(default_factory=list, description=REPORT_TO_HELP + " One step per iteration, in the run folder.")


@dataclass
class OptimizerResult:
    run_id: str
    run_dir: Path
    best: str  # candidate id of the final skill
    best_skill: Skill
    accepted: list[str] = field(default_factory=list)
    candidates: int = 0
    episodes: int = 0
    wall_time: float = 0.0


# ---------------------------------------------------------------------------------------
# LLM rewrites through any policy

REWRITE_SYSTEM = (
    "You improve a skill: a short procedure an agent follows to solve coding tasks. "
    "Reply with the complete rewritten skill and nothing else, in exactly this Markdown format:\n"
    "# Skill: NAME\n## [section-id] Title\nbody\n## [another-id] Title\nbody\n"
    "Keep the id of every section you keep; give new sections new lowercase ids. "
    "Put commands in backticks."
)


def _feedback(episodes: Sequence[Episode], chars: int = 600) -> str:
    lines = []
    for ep in episodes:
        last = ep.turns[-1].tool_result if ep.turns else ""
        lines.append(f"- task {ep.context.task_id}: {'solved' if ep.success else 'FAILED'} in {ep.num_turns} turns; "
                     f"last tool output: {last[-chars:]!r}")
    return "\n".join(lines)


def llm_rewrite(rewriter: Policy, parent: Skill, episodes: Sequence[Episode], *, key: str, seed: int) -> tuple[Skill | None, str, str]:
    """Ask a policy for a rewrite. Returns (skill or None, description, raw text); unparseable
    output is a counted format error (None), never an exception."""
    messages = [
        {"role": "system", "content": REWRITE_SYSTEM},
        {"role": "user", "content": f"Current skill:\n\n{parent.render()}\nHow it did on the last minibatch:\n{_feedback(episodes)}\n\nRewrite the skill."},
    ]
    state = AgentState(messages=messages, harness_id="skill-rewriter", task_id=f"rewrite:{parent.version}", turn=0,
                       episode_key=key, seed=seed)
    try:
        text = rewriter.act([state])[0].text
    finally:
        rewriter.end_episode(state)
    start = min((i for i in (text.find("# Skill:"), text.find("## [")) if i >= 0), default=-1)
    if start < 0:
        return None, "llm_rewrite(format_error: no `## [id] Title` section)", text
    try:
        skill = parse_skill(text[start:], source="rewrite", name=parent.name)
    except ConfigError as err:
        return None, f"llm_rewrite(format_error: {err})", text
    return skill, "llm_rewrite", text


# ---------------------------------------------------------------------------------------
# The optimizer


class SkillOptimizer:
    """Runs the loop above. `describe` (harness, policy, task source) goes into the log header so
    an audit can rebuild the same evaluation (see harnessrl.analysis.bipa)."""

    def __init__(
        self,
        cfg: SkillOptimizerConfig,
        *,
        policy: Policy,
        harness: HarnessSpec,
        seed_skill: Skill,
        train_tasks: Sequence[TaskLike],
        validation_tasks: Sequence[TaskLike] = (),
        test_tasks: Sequence[TaskLike] = (),
        run_dir: str | Path,
        store: Any,
        rewriter: Policy | None = None,
        describe: dict[str, Any] | None = None,
        open_env: Callable[[Any, int], Any] = default_open_env,
    ):
        m = cfg.acceptance.minibatch_size
        if len(train_tasks) < m:
            raise ConfigError(f"acceptance.minibatch_size={m} needs at least {m} train tasks; got {len(train_tasks)}")
        if cfg.acceptance.role == "validation" and not validation_tasks:
            raise ConfigError(f"acceptance.rule={cfg.acceptance.rule!r} needs validation tasks; give some, or use strict_minibatch")
        if cfg.proposer.llm_share > 0 and rewriter is None:
            raise ConfigError("proposer.llm_share > 0 needs a rewriter policy (an endpoint or LM policy)")
        overlap = {task_id(t) for t in train_tasks} & {task_id(t) for t in test_tasks}
        if overlap:
            raise ConfigError(f"test tasks {sorted(overlap)} are also train tasks; held-out means disjoint")
        self.cfg, self.policy, self.spec, self.rewriter = cfg, policy, harness, rewriter
        self.seed_skill = seed_skill
        self.train, self.validation, self.test = list(train_tasks), list(validation_tasks), list(test_tasks)
        self.run_id = cfg.run_id or f"skillopt-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        self.run_dir, self.store, self.open_env = Path(run_dir), store, open_env
        self.describe = describe or {}
        self.n_episodes = 0

    # -- bookkeeping ------------------------------------------------------------------------

    def _evaluate(self, log: SkillLogWriter, cand: str, parent: str | None, skill: Skill, tasks: Sequence[TaskLike],
                  seeds: Sequence[int], role: str, iteration: int) -> tuple[str, list[Episode]]:
        eval_id = f"e{iteration:04d}-{role}-{cand}"
        meta = {"run": self.run_id, "candidate": cand, "parent": parent, "role": role, "iteration": iteration, "evaluation": eval_id}
        eps = run_skill(self.policy, self.spec, skill, tasks, seeds, run_id=self.run_id, meta=meta, store=self.store, open_env=self.open_env)
        self.n_episodes += len(eps)
        log.write("evaluation", evaluation_id=eval_id, candidate_id=cand, role=role, iteration=iteration,
                  skill_version=skill.version, task_ids=[task_id(t) for t in tasks], seeds=[int(s) for s in seeds],
                  episode_ids=[e.episode_id for e in eps], scores=[float(e.reward) for e in eps],
                  success=[bool(e.success) for e in eps], tokens_in=[int(e.tokens_in) for e in eps],
                  turns=[e.num_turns for e in eps], statuses=[e.status for e in eps])
        return eval_id, eps

    def _header(self, log: SkillLogWriter) -> None:
        log.write("header", run_id=self.run_id, config=self.cfg.model_dump(mode="json"),
                  harness=self.spec.model_dump(mode="json"), seed_skill=self.seed_skill.to_json(),
                  tasks={"train": [task_id(t) for t in self.train], "validation": [task_id(t) for t in self.validation],
                         "test": [task_id(t) for t in self.test]},
                  store=str(getattr(self.store, "root", "")), policy_id=self.policy.policy_id, **self.describe)

    # -- the loop --------------------------------------------------------------------------

    def run(self, progress: Callable[[int, int], None] | None = None) -> OptimizerResult:
        cfg, acc = self.cfg, self.cfg.acceptance
        t0 = time.perf_counter()
        rng = np.random.default_rng(cfg.seed)
        pool = cfg.proposer.section_pool()
        trackers = Trackers(self.run_dir, cfg.report_to, self.run_id, cfg.model_dump(mode="json"))  # a missing tracker fails first
        log = SkillLogWriter(self.run_dir)
        try:
            self._header(log)
            current, current_skill = "c0000", self.seed_skill
            log.write("candidate", candidate_id=current, parent_id=None, iteration=0, operator="seed", description="seed skill",
                      skill=current_skill.to_json(), version=current_skill.version)
            val_score: dict[str, float] = {}
            if acc.role == "validation":
                seeds = [derive_seed(cfg.seed, 0, "validation", k) for k in range(len(self.validation))]
                _, eps = self._evaluate(log, current, None, current_skill, self.validation, seeds, "validation", 0)
                val_score[current] = float(np.mean([e.reward for e in eps]))
            accepted: list[str] = []
            for it in range(1, cfg.iterations + 1):
                idx = rng.choice(len(self.train), size=acc.minibatch_size, replace=False)
                batch = [self.train[i] for i in sorted(idx)]
                p_seeds = [derive_seed(cfg.seed, it, "parent", k) for k in range(len(batch))]
                c_seeds = p_seeds if cfg.paired_seeds else [derive_seed(cfg.seed, it, "candidate", k) for k in range(len(batch))]
                use_llm = rng.random() < cfg.proposer.llm_share
                need_parent_eval = acc.role == "minibatch" or use_llm
                p_eval, p_eps = (self._evaluate(log, current, None, current_skill, batch, p_seeds, "minibatch", it)
                                 if need_parent_eval else (None, []))
                cand = f"c{it:04d}"
                if use_llm:
                    skill, desc, raw = llm_rewrite(self.rewriter, current_skill, p_eps, key=f"{self.run_id}-rw{it}",
                                                   seed=derive_seed(cfg.seed, it, "rewrite"))
                    operator = "llm_rewrite"
                else:
                    operator = cfg.proposer.operators[int(rng.integers(len(cfg.proposer.operators)))]
                    skill, desc = mutate(current_skill, operator, rng, pool)
                    raw = ""
                log.write("candidate", candidate_id=cand, parent_id=current, iteration=it, operator=operator, description=desc,
                          skill=None if skill is None else skill.to_json(), version=None if skill is None else skill.version,
                          status="format_error" if skill is None else "ok", raw=raw[:4000])
                if skill is None:
                    log.write("decision", iteration=it, parent_id=current, candidate_id=cand, rule=acc.rule, accepted=False,
                              parent_score=None, candidate_score=None, reason="rewrite did not parse (format error)",
                              parent_evaluation=p_eval, candidate_evaluation=None)
                    if progress:
                        progress(it, cfg.iterations)
                    continue
                if acc.role == "minibatch":
                    c_eval, c_eps = self._evaluate(log, cand, current, skill, batch, c_seeds, "minibatch", it)
                    d = decide(acc, np.array([e.reward for e in p_eps]), np.array([e.reward for e in c_eps]))
                else:
                    seeds = [derive_seed(cfg.seed, it, "validation", k) for k in range(len(self.validation))]
                    c_eval, c_eps = self._evaluate(log, cand, current, skill, self.validation, seeds, "validation", it)
                    d = decide(acc, val_score[current], np.array([e.reward for e in c_eps]))
                log.write("decision", iteration=it, parent_id=current, candidate_id=cand, rule=acc.rule, accepted=d.accepted,
                          parent_score=d.parent_score, candidate_score=d.candidate_score, reason=d.reason,
                          parent_evaluation=p_eval, candidate_evaluation=c_eval, margin=acc.margin)
                if d.accepted:
                    accepted.append(cand)
                    if acc.role == "validation":
                        val_score[cand] = d.candidate_score
                    current, current_skill = cand, skill
                trackers.log({"accepted": float(d.accepted), "accepted_total": len(accepted), "episodes": self.n_episodes,
                              "parent_score": d.parent_score, "candidate_score": d.candidate_score}, it)
                if progress:
                    progress(it, cfg.iterations)
            log.write("end", best=current, best_version=current_skill.version, accepted=accepted,
                      episodes=self.n_episodes, wall_time=time.perf_counter() - t0)
        finally:
            log.close()
            trackers.close()
        return OptimizerResult(self.run_id, self.run_dir, current, current_skill, accepted, cfg.iterations + 1,
                               self.n_episodes, time.perf_counter() - t0)
