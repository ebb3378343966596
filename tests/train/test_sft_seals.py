"""The warm start's demonstrations are training data: a sealed task (or harness) is refused before
any episode runs, by id and by content, exactly as the RL trainer refuses it."""

from __future__ import annotations

import shutil

import pytest

from harnessrl.evaluate.seal import SealedError, create_seal
from harnessrl.harness.base import make_harness
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.scripted import Oracle
from harnessrl.tasks.base import BUILTIN_DIR
from harnessrl.train.sft import demonstrations, warm_start
from harnessrl.train.tasks import load_tasks
from tests import tiny_lm


def code_v2(*names: str) -> list:
    by_name = {t.id.split("/")[-1]: t for t in load_tasks("code-v2")}
    return [by_name[n] for n in names]


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    return LMPolicy.from_config(LMConfig(model=str(tiny_lm.build(tmp_path_factory.mktemp("sft")))))


def test_demonstrations_refuse_a_sealed_task_and_run_the_rest(policy, tmp_path):
    tasks = code_v2("fix-is-even", "fix-last-item")
    create_seal("held", tasks=tasks[:1], directory=tmp_path / "seals")
    harness = make_harness("swe_agent")
    with pytest.raises(SealedError, match="fix-is-even"):
        demonstrations(policy, Oracle(), [harness], tasks, seals_dir=tmp_path / "seals")
    demos = demonstrations(policy, Oracle(), [harness], tasks[1:], seals_dir=tmp_path / "seals")
    assert [d.context.task_id for d in demos] == [tasks[1].id] and demos[0].success
    assert sum(int(t.loss_mask.sum()) for t in demos[0].turns) > 0  # the oracle's replies in the LM's tokens


def test_a_renamed_copy_of_a_sealed_task_is_refused_too(policy, tmp_path):
    (task,) = code_v2("fix-is-even")
    create_seal("held", tasks=[task], directory=tmp_path / "seals")
    shutil.copytree(BUILTIN_DIR / "code-v2" / "fix-is-even", tmp_path / "suite" / "parity-bug")
    shutil.copy(BUILTIN_DIR / "code-v2" / "suite.toml", tmp_path / "suite" / "suite.toml")
    (copy,) = load_tasks(str(tmp_path / "suite"))
    with pytest.raises(SealedError, match="parity-bug"):
        demonstrations(policy, Oracle(), [make_harness("terminus")], [copy], seals_dir=tmp_path / "seals")


def test_warm_start_writes_nothing_when_a_task_is_sealed(tmp_path):
    tasks = code_v2("fix-mean-divisor")
    create_seal("held", tasks=tasks, directory=tmp_path / "seals")
    cfg = LMConfig(model=str(tiny_lm.build(tmp_path)))
    with pytest.raises(SealedError):
        warm_start(tmp_path / "sft", cfg, Oracle(), "swe_agent", tasks, seeds=1, epochs=1, lr=1e-3, batch_rows=4,
                   seals_dir=tmp_path / "seals")
    assert not (tmp_path / "sft").exists()
