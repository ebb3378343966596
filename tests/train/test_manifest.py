"""The frozen training manifest (train/manifest.py): written before training, checked on resume,
shared by the runs of one comparison; any tampering with the task-harness records is refused."""

from __future__ import annotations

import json
import shutil

import pytest

from harnessrl.config import ConfigError
from harnessrl.harness.base import make_harness
from harnessrl.rollout.envs import open_env
from harnessrl.tasks.base import BUILTIN_DIR
from harnessrl.train.manifest import MANIFEST, build_manifest, freeze
from harnessrl.train.tasks import load_tasks, task_id

HARNESSES = ["lookup-plain", "lookup-kv"]


def _lookup_manifest(n: int = 3, harnesses=HARNESSES) -> dict:
    return build_manifest(load_tasks("lookup", None)[:n], [make_harness(h) for h in harnesses], open_env)


def test_manifest_records_every_pair_and_is_deterministic(tmp_path):
    a, b = _lookup_manifest(), _lookup_manifest()
    assert a["sha256"] == b["sha256"] and len(a["records"]) == 3 * 2
    rec = a["records"][0]
    assert rec["harness_id"] == "lookup-plain" and rec["messages"][-1]["role"] == "user" and rec["tools"]
    assert freeze(tmp_path / MANIFEST, a) == a["sha256"]
    assert freeze(tmp_path / MANIFEST, b) == a["sha256"]  # the same records: accepted
    assert json.loads((tmp_path / MANIFEST).read_text())["sha256"] == a["sha256"]
    assert [p.name for p in tmp_path.iterdir()] == [MANIFEST]  # no temporary file left behind


def test_other_pairs_or_another_harness_spec_are_refused(tmp_path):
    freeze(tmp_path / MANIFEST, _lookup_manifest())
    with pytest.raises(ConfigError, match="task-harness pairs differ"):
        freeze(tmp_path / MANIFEST, _lookup_manifest(n=4))
    h = make_harness("lookup-kv")
    h.spec = h.spec.model_copy(update={"max_turns": h.spec.max_turns + 1})
    other = build_manifest(load_tasks("lookup", None)[:3], [make_harness("lookup-plain"), h], open_env)
    with pytest.raises(ConfigError, match="the harness spec of task .* in harness 'lookup-kv' changed"):
        freeze(tmp_path / MANIFEST, other)


def test_an_edited_task_folder_is_refused(tmp_path):
    suite = tmp_path / "code-v1"
    shutil.copytree(BUILTIN_DIR / "code-v1", suite)
    (task,) = load_tasks(str(suite), ["code-v1/feat-histogram"])
    harnesses = [make_harness("aider")]
    freeze(tmp_path / MANIFEST, build_manifest([task], harnesses, open_env))
    target = next(p for p in sorted((suite / "feat-histogram" / "tests").rglob("*.py")))
    target.write_text(target.read_text() + "\n# edited after the manifest was frozen\n")
    (task,) = load_tasks(str(suite), ["code-v1/feat-histogram"])
    with pytest.raises(ConfigError, match="the task's files of task 'code-v1/feat-histogram'"):
        freeze(tmp_path / MANIFEST, build_manifest([task], harnesses, open_env))


@pytest.mark.slow
def test_training_writes_checks_and_shares_the_manifest(tmp_path):
    from harnessrl.policies.lm import LMConfig
    from harnessrl.train.agent import AgentTrainConfig, AgentTrainer
    from tests import tiny_lm

    model = tiny_lm.build(tmp_path)
    tasks = load_tasks("lookup", None)[:2]
    shared = tmp_path / "shared" / MANIFEST

    def cfg(name: str, grouping: str, harnesses=HARNESSES) -> AgentTrainConfig:
        return AgentTrainConfig(policy=LMConfig(model=str(model), max_new_tokens=8), run_dir=str(tmp_path / name),
                                suite="lookup", tasks=[task_id(t) for t in tasks], harnesses=harnesses, group_size=2,
                                tasks_per_update=1, updates=1, grouping=grouping, manifest=str(shared))

    within = AgentTrainer(cfg("within", "within"), tasks=tasks)
    within.run()
    cross = AgentTrainer(cfg("cross", "cross"), tasks=tasks)
    cross.run()
    # both rules trained on one frozen set of records, kept with each run and shared
    sha = json.loads(shared.read_text())["sha256"]
    assert within.manifest_sha256 == cross.manifest_sha256 == sha
    assert json.loads((tmp_path / "within" / MANIFEST).read_text())["sha256"] == sha
    # a run of the comparison on other records is refused before any update
    with pytest.raises(ConfigError, match="frozen manifest"):
        AgentTrainer(cfg("other", "within", ["lookup-plain", "lookup-brief"]), tasks=tasks).run()
    assert not (tmp_path / "other" / "checkpoint.pt").exists() and not (tmp_path / "other" / MANIFEST).exists()
    # tampering with a run's manifest is caught on resume
    path = tmp_path / "within" / MANIFEST
    saved = json.loads(path.read_text())
    saved["records"][0]["prompt_sha256"] = "0" * 64
    saved["sha256"] = "f" * 64
    path.write_text(json.dumps(saved))
    with pytest.raises(ConfigError, match="the first prompt of task"):
        AgentTrainer(cfg("within", "within").model_copy(update={"updates": 2}), tasks=tasks).run(resume=True)
