"""Recipe: audit a skill optimizer with BiPA, end to end on the built-in coding suite.

    harnessrl recipe bipa                       # ~3-5 minutes on 2 CPU cores
    harnessrl recipe bipa --policy probe-skill-blind

1. A hand-written seed skill (three sections) goes into an OpenHands-style harness.
2. The skill optimizer (GEPA's strict minibatch rule, minibatch 3) proposes rewrites with the
   deterministic mutation operators (optionally LLM rewrites through any policy) for
   `iterations` rounds on the train tasks; every episode goes to the record store and every
   decision to the hash-chained optimizer log.
3. The BiPA audit replays each accepted decision on identical candidates, re-evaluates the
   accepted lineage on fresh seeds and held-out test tasks, builds the turn-text read graph,
   counts cost, and checks the four design principles.
4. An HTML report with figures, the audit JSON and the graph exports are written under `out`.

The default policy is a probe with known ground truth: it acts on the `inspect` section (runs
its command) and solves a task with probability 0.6 when that section is in its prompt, 0.2
when not. So exactly one kind of edit is real (adding `inspect`), every other accepted gain
is selection, and the audit can be checked against that. Any registered policy works
(`--policy lm:PATH`, `--policy endpoint:MODEL`, `--policy probe-skill-blind`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from pydantic import Field

from harnessrl.analysis.bipa import audit
from harnessrl.config import Config, ConfigError
from harnessrl.evaluate.skill_audit import AuditConfig, SkillEvaluator, audit_rollouts
from harnessrl.evaluate.skill_runs import read_log
from harnessrl.harness.base import HarnessSpec, load_spec
from harnessrl.harness.skills import DEFAULT_POOL, Skill, SkillSection, load_skill
from harnessrl.policies.base import Policy
from harnessrl.policies.registry import PolicySpec, make_policy
from harnessrl.records import RecordStore
from harnessrl.recipes import splits
from harnessrl.report.bipa import audit_report
from harnessrl.rollout.suites import load_suite, task_id
from harnessrl.train.metrics import REPORT_TO_HELP, ReportTo, share_trackio_store
from harnessrl.train.skill_optimizer import ProposerConfig, SkillOptimizer, SkillOptimizerConfig

SEED_SKILL = Skill("fix-python-bugs", (
    SkillSection("read-first", "Read before you edit", "Open the file the issue names and read the whole function before changing it."),
    SkillSection("minimal-edit", "Keep the edit small", "Change only the lines the bug is in; keep every name and signature as it is."),
    SkillSection("explain", "Say what changed", "End with one sentence that says what was wrong and why the fix works."),
))
INSPECT = SkillSection("inspect", "Look around first", "Start by running `ls -la /app` to see every file before you open one.")
#: what add_section draws from: the one helpful section and three generic ones (none sharing its command)
RECIPE_POOL = [INSPECT] + [s for s in DEFAULT_POOL if s.id != "check-paths"]


class BipaRecipeConfig(Config):
    out: str = Field("runs/bipa", description="Folder for the store, the optimizer run, the audit and report.html.")
    suite: str = Field("code-v1", description="A suite name or folder (code/terminal tasks, or lookup).")
    harness: str = Field("openhands", description="Harness id or spec file; its system prompt carries the skill.")
    policy: str = Field("probe-section-follower:inspect", description="Policy spec (see harnessrl.policies.registry).")
    policy_options: dict[str, Any] = Field(default_factory=lambda: {"p_with": 0.6, "p_without": 0.2})
    rewriter: str | None = Field(None, description="Policy spec for LLM rewrites (e.g. endpoint:MODEL); None = mutations only.")
    seed_skill: str | None = Field(None, description="A skill file (Markdown); default the recipe's three-section skill.")
    train_tasks: int = Field(6, ge=1)
    validation_tasks: int = Field(0, ge=0, description="Held-out validation tasks (for the validation acceptance rules).")
    test_tasks: int = Field(6, ge=0, description="Held-out test tasks: never seen by the optimizer, only by the audit.")
    tasks_seed: int = Field(0, description="Seeds which suite tasks become train / test.")
    optimizer: SkillOptimizerConfig = Field(default_factory=lambda: SkillOptimizerConfig(
        iterations=10, seed=0,
        proposer=ProposerConfig(operators=["add_section", "add_section", "rephrase", "drop_section", "reorder_sections", "duplicate_section"],
                                pool=[[s.id, s.title, s.text] for s in RECIPE_POOL])))
    audit: AuditConfig = Field(default_factory=lambda: AuditConfig(replays=6, null_replays=2, fresh_seeds=3))
    workers: int = Field(2, ge=1, description="Audit rollouts in a local process pool of this many workers (1 = in process).")
    backend: str = Field("local", description="local | ray (audit rollouts).")
    report_to: ReportTo = Field(default_factory=list, description=REPORT_TO_HELP + " The optimizer run's iterations, in <out>/run.")


def split_tasks(suite: str, n_train: int, n_test: int, seed: int) -> tuple[list[Any], list[Any]]:
    """`n_train` training and `n_test` held-out tasks of `suite`, drawn by a seeded shuffle."""
    tasks = list(load_suite(suite)) if suite != "lookup" else _lookup()
    return splits.split_tasks(tasks, n_test, n_train=n_train, seed=seed, min_held=0,
                              what=f"train_tasks + test_tasks on suite {suite!r}")


def _lookup() -> list[Any]:
    from harnessrl.envs.lookup import lookup_tasks

    return lookup_tasks()


def tasks_by_id(suite: str, ids: list[str]) -> dict[str, Any]:
    tasks = list(load_suite(suite)) if suite != "lookup" else _lookup()
    by = {task_id(t): t for t in tasks}
    missing = [i for i in ids if i not in by]
    if missing:
        raise ConfigError(f"suite {suite!r} no longer has tasks {missing}; the audit needs the run's own tasks")
    return {i: by[i] for i in ids}


def rebuild(log: Any) -> tuple[PolicySpec, HarnessSpec, dict[str, Any]]:
    """The policy spec, harness and tasks an optimizer run used, from its log header."""
    h = log.header
    if "policy" not in h or "suite" not in h:
        raise ConfigError(f"{log.path}: the header does not record a policy spec and suite, so the CLI cannot rebuild "
                          "the run's evaluation; audit it from Python with harnessrl.evaluate.skill_audit.audit_rollouts and harnessrl.analysis.bipa.audit")
    spec = HarnessSpec.model_validate(h["harness"])
    ids = h["tasks"]["train"] + h["tasks"]["validation"] + h["tasks"]["test"]
    return PolicySpec(**h["policy"]), spec, tasks_by_id(h["suite"], ids)


def run_audit(run_dir: str | Path, store: RecordStore, cfg: AuditConfig, out: str | Path, *,
              progress: Callable[[int], None] | None = None, policy: Policy | None = None, workers: int = 1,
              backend: str = "local") -> tuple[Any, dict[str, Path]]:
    """Audit an optimizer run: rebuild its evaluation from the log, replay, re-evaluate, write."""
    log = read_log(run_dir)
    pspec, spec, tasks = rebuild(log)
    ev = SkillEvaluator(policy or make_policy(pspec), spec, tasks, run_id=f"{log.run_id}-audit", store=store,
                        progress=progress, policy_spec=pspec, workers=workers, backend=backend)
    try:
        result = audit(log, store, audit_rollouts(log, ev, cfg), cfg)
    finally:
        if policy is None:
            ev.policy.close()
    return result, result.write(out)


def run(cfg: BipaRecipeConfig, progress: Callable[[str, int, int | None], None] | None = None) -> dict[str, Any]:
    """Optimizer + audit + report. Returns paths, the audit summary and the runtime."""
    t0 = time.perf_counter()
    out = Path(cfg.out)
    if (out / "run").exists():
        raise ConfigError(f"{out}/run already holds an optimizer run; give a new --out")
    store = RecordStore(out / "store")
    skill = load_skill(cfg.seed_skill) if cfg.seed_skill else SEED_SKILL
    pspec = PolicySpec.parse(cfg.policy, cfg.policy_options)
    policy = make_policy(pspec)
    rewriter = make_policy(cfg.rewriter) if cfg.rewriter else None
    train, rest = split_tasks(cfg.suite, cfg.train_tasks, cfg.validation_tasks + cfg.test_tasks, cfg.tasks_seed)
    validation, test = rest[:cfg.validation_tasks], rest[cfg.validation_tasks:]
    share_trackio_store(out, cfg.report_to)
    ocfg = cfg.optimizer.model_copy(update={"report_to": list(dict.fromkeys([*cfg.optimizer.report_to, *cfg.report_to]))})
    opt = SkillOptimizer(ocfg, policy=policy, harness=load_spec(cfg.harness), seed_skill=skill, train_tasks=train,
                         validation_tasks=validation, test_tasks=test, run_dir=out / "run", store=store, rewriter=rewriter,
                         describe={"policy": {"name": pspec.name, "arg": pspec.arg, "options": pspec.options}, "suite": cfg.suite})
    res = opt.run(progress=(lambda i, n: progress("optimize", i, n)) if progress else None)
    t_opt = time.perf_counter() - t0
    count = [0]

    def tick(n: int) -> None:
        count[0] += n
        if progress:
            progress("audit", count[0], None)

    result, files = run_audit(out / "run", store, cfg.audit, out / "audit", progress=tick, policy=policy,
                              workers=cfg.workers, backend=cfg.backend)
    runtime = time.perf_counter() - t0
    rep = audit_report(result, files=files, config=cfg, store=str(out / "store"),
                       reproduce=[f"harnessrl recipe bipa --out {out}", f"harnessrl bipa audit {out / 'run'} --store {out / 'store'}"],
                       scale_note=(f"{cfg.train_tasks} train / {cfg.test_tasks} test tasks of {cfg.suite}, {cfg.optimizer.iterations} "
                                   f"optimizer iterations, {cfg.audit.replays} replays per accepted decision, {cfg.audit.fresh_seeds} "
                                   f"fresh seeds per task; optimizer {t_opt:.0f} s, total {runtime:.0f} s."))
    report = rep.write(out / "report.html")
    return {"report": report, "files": files, "summary": result.summary, "principles": result.principles,
            "edits": result.edits, "runtime_s": runtime, "optimizer_s": t_opt, "optimizer_episodes": res.episodes, "run_id": res.run_id}
