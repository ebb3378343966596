"""Sealed splits: training refuses sealed items (also renamed copies), the seal's evaluation is
written once and chained to its manifest, and `verify` detects any edit."""

import json
import shutil

import pytest

from harnessrl.evaluate.run import plan_eval, run_eval
from harnessrl.evaluate.seal import (
    SealedError, check_not_sealed, create_seal, load_seal, verify_seal,
)
from harnessrl.harness.base import load_spec, make_harness
from harnessrl.records import RecordStore
from tests.harness.agent_fixtures import make_suite


@pytest.fixture
def world(tmp_path):
    suite = make_suite(tmp_path / "suite", {"fix-add": {}, "fix-add-b": {}, "fix-add-c": {}})
    return suite, tmp_path / "seals"


def test_training_refuses_sealed_tasks_and_harnesses_even_renamed(world, tmp_path):
    suite, seals = world
    create_seal("holdout", tasks=[suite["fix-add-b"]], harnesses=[make_harness("terminus")], suite="x", directory=seals)
    check_not_sealed(tasks=[suite["fix-add"]], harnesses=[make_harness("openhands")], directory=seals)  # fine
    with pytest.raises(SealedError, match="task t-v1/fix-add-b"):
        check_not_sealed(tasks=list(suite), directory=seals)
    with pytest.raises(SealedError, match="harness terminus"):
        check_not_sealed(harnesses=[make_harness("terminus")], directory=seals)
    renamed = make_harness(load_spec("terminus", ["id=my-term"]))  # same harness under another name
    with pytest.raises(SealedError, match="harness my-term"):
        check_not_sealed(harnesses=[renamed], directory=seals)
    copy = tmp_path / "copy"
    shutil.copytree(suite.root, copy)
    (copy / "suite.toml").write_text('[suite]\nname = "other"\n')
    from harnessrl.tasks.base import load_suite_folder
    with pytest.raises(SealedError, match="task other/fix-add-b"):  # the same task folder in another suite
        check_not_sealed(tasks=list(load_suite_folder(copy)), directory=seals)
    with pytest.raises(Exception, match="already exists"):
        create_seal("holdout", harnesses=[make_harness("aider")], directory=seals)


@pytest.mark.sandbox
def test_sealed_eval_is_written_once_and_tampering_is_detected(world, tmp_path):
    suite, seals = world
    store = RecordStore(tmp_path / "store")
    seal = create_seal("unseen", tasks=[suite["fix-add"], suite["fix-add-c"]], harnesses=[make_harness("qwen_code")],
                       suite="x", directory=seals)
    # an ordinary evaluation may not peek at sealed items; "all" leaves the sealed harness out
    with pytest.raises(SealedError):
        plan_eval(suite, ["qwen_code"], seals_dir=seals)
    with pytest.raises(SealedError):
        plan_eval(suite, ["openhands"], tasks=["fix-add"], seals_dir=seals)
    plan = plan_eval(suite, ["all"], tasks=["fix-add-b"], seals_dir=seals)
    assert "qwen_code" not in {h.id for h in plan.harnesses}
    assert ("t-v1/fix-add-b", "qwen_code", "sealed (evaluated only through its seal)") in plan.out_of_scope

    sealed = plan_eval(suite, sealed="unseen", seals_dir=seals)
    assert {t.id for t in sealed.tasks} == seal.task_ids and [h.id for h in sealed.harnesses] == ["qwen_code"]
    result = run_eval("oracle", sealed, store)
    assert result.sealed_record and all(e.success for e in result.episodes)
    assert verify_seal("unseen", store, seals, tasks=list(suite), harnesses=[make_harness("qwen_code")]) == []
    with pytest.raises(SealedError, match="evaluated once"):
        plan_eval(suite, sealed="unseen", seals_dir=seals)

    # 1. an edited evaluation record
    eval_path = load_seal("unseen", seals).eval_path
    original = eval_path.read_text()
    data = json.loads(original)
    data["entry"]["result"]["summary"][0]["pass@1"] = 0.5
    eval_path.write_text(json.dumps(data))
    assert any("evaluation record was edited" in p for p in verify_seal("unseen", store, seals))
    eval_path.write_text(original)
    # 2. an edited manifest
    seal_path = load_seal("unseen", seals).path
    manifest = seal_path.read_text()
    seal_path.write_text(manifest.replace("fix-add-c", "fix-add-b"))
    assert any("manifest was edited" in p for p in verify_seal("unseen", store, seals))
    # ... even when the forger also rewrites the manifest's own hash: the evaluation no longer chains to it
    from harnessrl.evaluate.seal import canonical, sha256
    forged_manifest = json.loads(manifest)
    forged_manifest["manifest"]["tasks"] = forged_manifest["manifest"]["tasks"][:1]
    forged_manifest["hash"] = sha256(canonical(forged_manifest["manifest"]))
    seal_path.write_text(json.dumps(forged_manifest))
    assert verify_seal("unseen", store, seals) == [f"{eval_path}: not chained to this seal's manifest"]
    seal_path.write_text(manifest)
    assert verify_seal("unseen", store, seals) == []
    # 3. an episode rewritten in the record store (a consistent, re-checksummed store)
    episodes = store.episodes()
    shutil.rmtree(store.root)
    forged = RecordStore(tmp_path / "store")
    episodes[0].success, episodes[0].outcome = False, "dropped_requirement"
    forged.append(episodes[1:] + [episodes[0]])
    assert any(f"episode {episodes[0].episode_id} was edited" in p for p in verify_seal("unseen", forged, seals))
    # 4. a sealed task changed on disk since sealing
    (suite["fix-add"].root / "instruction.md").write_text("something else")
    assert any("task t-v1/fix-add changed since it was sealed" in p
               for p in verify_seal("unseen", None, seals, tasks=list(suite)))
