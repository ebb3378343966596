"""Skills: parsing/rendering round trip, content-hash versions, deterministic mutations."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.config import ConfigError
from harnessrl.harness.base import HarnessSpec
from harnessrl.harness.skills import (
    DEFAULT_POOL, MUTATIONS, Skill, SkillSection, load_skill, mutate, parse_skill, skill_in_prompt, with_skill,
)

SEED = Skill("fix-bugs", (
    SkillSection("read-first", "Read before you edit", "Open the failing file with `cat` and read the whole function."),
    SkillSection("run-tests", "Run the tests", "Run `python -m pytest -q` after every edit and read the first failure."),
    SkillSection("minimal", "Keep edits minimal", "Change only the lines the failure points to."),
))

ids = st.from_regex(r"[a-z0-9][a-z0-9-]{0,10}", fullmatch=True)
body = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="#\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=60).map(str.strip)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(ids, st.text("abc XYZ", max_size=12).map(str.strip), body), min_size=1, max_size=5, unique_by=lambda t: t[0]))
def test_render_parse_round_trip(secs):
    skill = Skill("s", tuple(SkillSection(i, t, b) for i, t, b in secs))
    again = parse_skill(skill.render())
    assert again.to_json() == skill.to_json() and again.version == skill.version
    assert skill_in_prompt("system text\n" + skill.render()) == skill.section_ids


def test_version_is_a_content_hash():
    same = Skill("fix-bugs", tuple(SkillSection(s.id, s.title, s.text) for s in SEED.sections))
    assert same.version == SEED.version and SEED.version.startswith("fix-bugs@") and len(SEED.version) == len("fix-bugs@") + 12
    edited = SEED.with_sections(SEED.sections[:2] + (SkillSection("minimal", "Keep edits minimal", "Change less."),))
    assert edited.version != SEED.version
    assert Skill.from_json(SEED.to_json()) == SEED


def test_parse_errors_name_the_line(tmp_path):
    with pytest.raises(ConfigError, match=r"skill:2: section heading .* needs an id"):
        parse_skill("# Skill: x\n## Title without id\nbody")
    with pytest.raises(ConfigError, match="text before the first"):
        parse_skill("stray text\n## [a] A\nbody")
    with pytest.raises(ConfigError, match="appear more than once"):
        parse_skill("## [a] A\nx\n## [a] B\ny")
    with pytest.raises(ConfigError, match="no sections"):
        parse_skill("# Skill: empty\n")
    with pytest.raises(ConfigError, match="does not exist"):
        load_skill(tmp_path / "nope.md")
    (tmp_path / "s.md").write_text(SEED.render())
    assert load_skill(tmp_path / "s.md") == SEED


def test_with_skill_injects_and_records_version():
    spec = HarnessSpec(id="h", style="answer_tag", system_prompt="You fix code.")
    out = with_skill(spec, SEED)
    assert out.system_prompt.endswith("$skill") and out.skill == SEED.render() and out.skill_version == SEED.version
    templated = HarnessSpec(id="h", style="answer_tag", system_prompt="Intro\n$skill\nOutro")
    assert with_skill(templated, SEED).system_prompt == "Intro\n$skill\nOutro"
    assert with_skill(spec, None).skill is None and spec.skill is None  # the original is untouched


def test_mutations_are_deterministic_and_do_what_they_say():
    for name in MUTATIONS:
        a = mutate(SEED, name, np.random.default_rng(7))
        b = mutate(SEED, name, np.random.default_rng(7))
        assert a == b, name
    same, desc = mutate(SEED, "noop", np.random.default_rng(0))
    assert same == SEED and same.version == SEED.version and desc == "noop"
    dropped, desc = mutate(SEED, "drop_section", np.random.default_rng(1))
    gone = set(SEED.section_ids) - set(dropped.section_ids)
    assert len(gone) == 1 and desc == f"drop_section({gone.pop()})"
    dup, _ = mutate(SEED, "duplicate_section", np.random.default_rng(2))
    assert len(dup.sections) == 4 and len(set(dup.section_ids)) == 4
    assert sorted(s.text for s in dup.sections) == sorted([s.text for s in SEED.sections] + [dup.sections[[i for i, s in enumerate(dup.section_ids) if s not in SEED.section_ids][0]].text])
    re_, _ = mutate(SEED, "reorder_sections", np.random.default_rng(3))
    assert sorted(re_.section_ids) == sorted(SEED.section_ids) and re_.section_ids != SEED.section_ids
    added, desc = mutate(SEED, "add_section", np.random.default_rng(4))
    new = [s for s in added.sections if s.id not in SEED.section_ids]
    assert len(new) == 1 and new[0] in DEFAULT_POOL and desc == f"add_section({new[0].id})"
    reph, desc = mutate(SEED, "rephrase", np.random.default_rng(5))
    sid = desc[len("rephrase("):-1]
    assert reph.version != SEED.version and reph.section_ids == SEED.section_ids
    assert reph.section(sid).text != SEED.section(sid).text
    assert reph.section(sid).code_spans() == SEED.section(sid).code_spans()  # commands kept byte for byte


def test_degenerate_mutations_say_so():
    one = Skill("one", (SkillSection("a", "A", "Do a."),))
    assert mutate(one, "drop_section", np.random.default_rng(0))[1].startswith("drop_section(none")
    assert mutate(one, "reorder_sections", np.random.default_rng(0))[1].startswith("reorder_sections(none")
    full = Skill("full", DEFAULT_POOL)
    assert mutate(full, "add_section", np.random.default_rng(0))[1] == "add_section(none: pool exhausted)"
    with pytest.raises(ConfigError, match="unknown mutation operator 'swap'"):
        mutate(one, "swap", np.random.default_rng(0))


def _spec_ids(style_kinds):
    from harnessrl.harness.base import builtin_specs, load_spec

    return [i for i in builtin_specs() if load_spec(i).style in style_kinds]


@pytest.mark.parametrize("harness_id", _spec_ids({"answer_tag", "aider", "swe_agent", "openhands", "qwen_code", "terminus", "lookup"}))
def test_every_builtin_harness_puts_the_skill_in_its_system_prompt(harness_id):
    """Open a real session (sandboxed workspace / lookup env) under each built-in spec carrying a skill."""
    from harnessrl.harness.base import load_spec, make_harness
    from harnessrl.rollout.envs import open_env
    from harnessrl.rollout.suites import load_suite

    spec = load_spec(harness_id)
    harness = make_harness(with_skill(spec, SEED))
    if spec.style == "lookup":
        from harnessrl.envs.lookup import lookup_tasks

        task = lookup_tasks()[0]
    else:
        task = next(t for t in load_suite("code-v1") if harness.supports(t))
    env = open_env(task, 0)
    try:
        session = harness.open(task, env, 0)
        system = [m["content"] for m in session.messages if m["role"] == "system"]
        assert system and SEED.render().strip() in system[0], harness_id
        assert "$skill" not in system[0]
        assert skill_in_prompt(system[0]) == SEED.section_ids
    finally:
        env.close()
