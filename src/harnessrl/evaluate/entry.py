"""`harnessrl.evaluate(...)`: evaluate a policy across harnesses from Python (what `harnessrl eval` runs).

    result = harnessrl.evaluate("oracle", "lookup", ["lookup-plain", "lookup-kv"], tasks=["0", "1"], store="runs/store")
    result.summary          # pass@1 per harness with 95% CIs; result.cells per task x harness; result.episodes
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


def evaluate(policy: Any, suite: Any, harnesses: str | Sequence[Any] = "all", *, seeds: int = 1,
             tasks: Sequence[str] | None = None, store: Any = "runs/store", workers: int = 1, backend: str = "local",
             k: Sequence[int] = (1,), rewards: Any = None, run_id: str | None = None, group_size: int = 1,
             resume: bool = False) -> Any:
    """Run `policy` (a spec string such as "oracle" or "lm:PATH", or a PolicySpec) on `suite` (a name, a folder or
    a loaded suite) under `harnesses` (ids, spec files, HarnessSpecs or plugin references); every episode goes to
    the record store `store` (a path or a RecordStore); `resume` keeps the cells `run_id` already stored and runs
    the rest (without it a used run id is refused). Returns the EvalResult (summary, cells, episodes)."""
    from harnessrl.evaluate.run import plan_eval, run_eval
    from harnessrl.records import RecordStore

    names = [harnesses] if isinstance(harnesses, str) else list(harnesses)
    plan = plan_eval(suite, names, seeds, tasks=list(tasks) if tasks else None)
    store = store if isinstance(store, RecordStore) else RecordStore(Path(store))
    return run_eval(policy, plan, store, backend=backend, workers=workers, group_size=group_size, run_id=run_id,
                    ks=tuple(k), rewards=rewards, resume=resume)
