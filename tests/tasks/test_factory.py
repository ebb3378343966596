"""The task factory (`harnessrl tasks generate`): deterministic suites of real bug-fix tasks.

Each generated task must be real: its hidden tests fail on the buggy workspace and pass once the
reference edit is applied, by the real pytest and by the real grader; near-duplicates are dropped;
no origin function lands in two splits; the suites load and the oracle solves what noop does not."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.tasks.base import Solution
from harnessrl.tasks.factory import RULES, generate
from harnessrl.tasks.factory.build import Bug, build_task
from harnessrl.tasks.factory.pool import PoolStats, _Keeper, generate_pool, task_split
from harnessrl.tasks.factory.rules import mutations
from harnessrl.tasks.factory.sources import load_corpus
from harnessrl.tasks.factory.split import SPLITS, split_of
from harnessrl.tasks.factory.verify import confirm_with_pytest
from harnessrl.tasks.loaders import load_suite

CORPUS = load_corpus()
BY_NAME = {m.name: m for m in CORPUS}
SMALL = ["textkit", "numtheory", "containers"]  # strings, numbers, a class: every rule has sites here


def _trees_equal(a: Path, b: Path) -> bool:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files_a == files_b and all(filecmp.cmp(a / f, b / f, shallow=False) for f in files_a)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("factory") / "out"
    manifest = generate(out, seed=3, per_origin=2, pairs=0.25, modules=SMALL)
    return out, manifest


def test_same_seed_gives_a_byte_identical_suite(generated, tmp_path):
    out, manifest = generated
    again = generate(tmp_path / "again", seed=3, per_origin=2, pairs=0.25, modules=SMALL)
    assert again == manifest and manifest["tasks"] > 20
    assert _trees_equal(out, tmp_path / "again")
    other = generate(tmp_path / "other", seed=4, per_origin=2, pairs=0.25, modules=SMALL)
    assert [t["name"] for t in other["task_list"]] != [t["name"] for t in manifest["task_list"]]


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_makes_a_task_that_fails_before_and_passes_after_the_reference_edit(rule):
    """By the real `python -m pytest` on the files as written, not the factory's in-process check."""
    for name in SMALL + ["listops", "datekit"]:
        mod = BY_NAME[name]
        for mu in (mu for mu in mutations(mod) if mu.rule == rule):
            spec = build_task((Bug(mod, mu),), CORPUS, seed=0)
            if spec is None:
                continue
            ok, out = confirm_with_pytest(spec.workspace, spec.tests)
            assert not ok and "failed" in out, out
            fixed = Solution(spec.steps).final_files(spec.workspace)
            ok, out = confirm_with_pytest({**spec.workspace, **fixed}, spec.tests)
            assert ok, out
            assert spec.reports[0].rule == rule and spec.bugs[0].mutation.function in spec.instruction
            return
    pytest.fail(f"no corpus function gave a {rule} task")


def test_near_duplicates_are_dropped():
    mod = BY_NAME["textkit"]
    sites = [mu for mu in mutations(mod) if mu.function == "count_vowels" and mu.line == mod.source.splitlines().index(
        "        if ch in VOWELS:") + 1 and mu.rule in ("operator_swap", "negated_condition")]
    assert len(sites) == 2  # `ch not in VOWELS` and `not (ch in VOWELS)`: different text, same failing cases
    a, b = (build_task((Bug(mod, mu),), CORPUS, seed=0) for mu in sites)
    assert a.failing == b.failing
    keeper = _Keeper(0, PoolStats())
    assert keeper.offer(a) and not keeper.offer(b) and not keeper.offer(a)
    assert keeper.stats.duplicates == 2 and keeper.kept == [a]
    tasks, stats = generate_pool([mod], seed=0, per_origin=0, pairs=0)
    keys = [(t.bugs[0].mutation.location, t.failing) for t in tasks]
    assert len({k[0] for k in keys}) == len({k[1] for k in keys}) == len(tasks) and stats.duplicates > 0


def test_split_is_by_origin_and_never_shared(generated):
    out, manifest = generated
    seen: dict = {}
    for t in manifest["task_list"]:
        for origin in t["origins"]:
            seen.setdefault(tuple(origin), set()).add(t["split"])
            assert split_of(*origin) == t["split"]
    assert all(len(s) == 1 for s in seen.values())
    assert set(manifest["per_split"]) == set(SPLITS)
    assert manifest["max_per_origin"] <= 2
    suite = load_suite(out / "factory-train")
    assert all(t.meta.factory.split == "train" for t in suite)


def test_generated_suites_load_and_tasks_check_shows_them_loaded(generated):
    out, manifest = generated
    total = 0
    for split in SPLITS:
        root = out / f"factory-{split}"
        if not root.exists():
            continue
        suite = load_suite(root)
        total += len(suite)
        for task in suite:
            f = task.meta.factory
            assert f is not None and f.bug and f.bug[0].rule in RULES and f.bug[0].origin_file.startswith("corpus/")
            assert f.bug[0].origin_line > 0 and task.solution.steps
        r = CliRunner().invoke(app, ["tasks", "check", str(root)])
        assert r.exit_code == 0 and f"{len(suite)} loaded, 0 rejected" in r.output, r.output
    assert total == manifest["tasks"]
    assert json.loads((out / "manifest.json").read_text())["tasks"] == total


def test_cli_generate_refuses_a_non_empty_folder_and_unknown_rules(generated, tmp_path):
    out, _ = generated
    r = CliRunner().invoke(app, ["tasks", "generate", str(out)])
    assert r.exit_code == 2 and "not empty" in r.output
    (tmp_path / "file").write_text("x")
    for args, message in ((["--rules", "typo"], "unknown rules"), (["--per-origin", "-1"], "use 0 or more"),
                          (["--sources", "web"], "use corpus and/or pypi")):
        r = CliRunner().invoke(app, ["tasks", "generate", str(tmp_path / "x"), *args])
        assert r.exit_code == 2 and r.output.startswith("error:") and message in r.output, r.output
    r = CliRunner().invoke(app, ["tasks", "generate", str(tmp_path / "file")])
    assert r.exit_code == 2 and "not a folder" in r.output and not (tmp_path / "x").exists()


def _three(out: Path):
    suite = load_suite(out / "factory-train")
    names = sorted(suite, key=lambda t: (t.meta.factory.bugs, t.name))
    picks = [t for t in names if t.meta.factory.bugs == 1][:2] + [t for t in names if t.meta.factory.bugs == 2][:1]
    return suite, [t.name for t in picks]


@pytest.mark.sandbox
def test_real_grader_fails_the_bug_and_passes_the_reference_edit(generated, sandbox):
    from harnessrl.tasks.runtime import TaskRuntime

    suite, names = _three(generated[0])
    for name in names:
        task = suite[name]
        with TaskRuntime(task, sandbox) as rt:
            before = rt.score()
        assert before.outcome == "dropped_requirement", (name, before.summary())
        with TaskRuntime(task, sandbox) as rt:
            rt.apply_solution()
            after = rt.score()
        assert after.success, (name, after.summary())


@pytest.mark.sandbox
@pytest.mark.slow
def test_oracle_solves_and_noop_does_not_through_swe_agent(generated, tmp_path):
    from harnessrl.evaluate.run import plan_eval, run_eval
    from harnessrl.records import RecordStore

    suite, names = _three(generated[0])
    plan = plan_eval(suite, ["swe_agent"], tasks=names)
    store = RecordStore(tmp_path / "st")
    oracle = run_eval("oracle", plan, store)
    assert len(oracle.episodes) == 3 and all(ep.outcome == "solved" for ep in oracle.episodes), \
        [(ep.context.task_id, ep.outcome) for ep in oracle.episodes]
    noop = run_eval("noop", plan, store)
    assert len(noop.episodes) == 3 and not any(ep.outcome == "solved" for ep in noop.episodes)
    assert {task_split_name for task_split_name in (t.meta.factory.split for t in suite)} == {"train"}


def test_task_split_matches_the_first_origin():
    tasks, _ = generate_pool([BY_NAME["stats"]], seed=1, per_origin=1, pairs=0.5)
    assert tasks and all(task_split(t) == split_of(*t.origins[0]) for t in tasks)
    assert all(len({split_of(*o) for o in t.origins}) == 1 for t in tasks)


def test_no_corpus_module_name_is_importable_here():
    """The grader puts /app last on sys.path: a corpus module named like an installed package (or a stdlib
    module) would import that package in the hidden tests instead of the workspace file."""
    import importlib.util

    clashes = {m.name: importlib.util.find_spec(m.name).origin for m in CORPUS if importlib.util.find_spec(m.name)}
    assert not clashes, f"rename these corpus modules: {clashes}"


def test_pypi_sources_make_tasks_when_fetched():
    """Real code with its own tests (pinned sdists): needs `harnessrl tasks fetch-sources` (network, once)."""
    from harnessrl.tasks.factory.pypi import cache_dir, load_pypi, missing

    if missing():
        pytest.skip(f"PyPI sources {missing()} not in {cache_dir()}: run `harnessrl tasks fetch-sources` (or make factory-sources)")
    (mod,) = load_pypi()
    assert mod.alias == "inflection" and "_irregular" in mod.header_deps  # the module calls it at import
    kept = 0
    for mu in mutations(mod)[::7]:
        spec = build_task((Bug(mod, mu),), [mod], seed=0)
        if spec is not None:
            kept += 1
            assert spec.bugs[0].module.origin.startswith("pypi/inflection-0.5.1/")
            if kept == 1:
                ok, out = confirm_with_pytest(spec.workspace, spec.tests)
                assert not ok, out
                ok, out = confirm_with_pytest({**spec.workspace, **Solution(spec.steps).final_files(spec.workspace)},
                                              spec.tests)
                assert ok, out
    assert kept >= 3
