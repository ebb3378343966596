"""Log-odds preference extraction on a real tiny LM through real lookup harnesses."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harnessrl.analysis.preferences import preference_table
from harnessrl.evaluate.contrasts import contrasts, score_contrasts
from harnessrl.harness.base import make_harness
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.train.tasks import load_tasks
from tests import tiny_lm


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    pol = LMPolicy.from_config(LMConfig(model=str(tiny_lm.build(tmp_path_factory.mktemp("lm"))), max_new_tokens=8))
    tasks = load_tasks("lookup")[:12]
    items = contrasts([make_harness("lookup-plain"), make_harness("lookup-kv")], tasks)
    return pol, tasks, items


def test_contrasts_render_each_harness_syntax_and_share_the_distractor(setup):
    _, tasks, items = setup
    assert len(items) == 2 * len(tasks)
    by = {(c.task_id, c.harness_id): c for c in items}
    for t in tasks:
        plain, kv = by[(t.task_id, "lookup-plain")], by[(t.task_id, "lookup-kv")]
        assert plain.better == f"look {t.target}" and plain.worse.startswith("look ") and plain.worse != plain.better
        assert plain.worse == kv.worse  # the same contrast, rendered per harness
        assert plain.messages != kv.messages  # but different states: each harness renders the task its own way


def test_untrained_policy_has_zero_correction_and_full_carryover(setup):
    pol, _, items = setup
    pol.freeze_reference()
    rows = preference_table(items, score_contrasts(pol, items))
    for r in rows:
        assert r["value_correction"] == pytest.approx(0, abs=1e-9)
        assert r["carryover_slope"] == pytest.approx(1, abs=1e-6)


def test_training_toward_the_better_action_in_one_harness_shows_as_its_value_correction(setup):
    pol, _, items = setup
    pol.freeze_reference()
    plain = [c for c in items if c.harness_id == "lookup-plain"]
    opt = torch.optim.Adam(pol.trainable_parameters(), lr=3e-3)
    pol.model.train()
    for _ in range(15):  # raise log pi(better) - log pi(worse) in lookup-plain only
        with torch.enable_grad():
            opt.zero_grad()
            loss = _contrast_loss(pol, plain)
            loss.backward()
            opt.step()
    pol.model.eval()
    rows = {r["harness"]: r for r in preference_table(items, score_contrasts(pol, items))}
    assert rows["lookup-plain"]["value_correction_lo"] > 0.5  # the learned preference, with its CI above 0
    assert rows["lookup-plain"]["p_better_trained"] > rows["lookup-plain"]["p_better_reference"]
    assert np.isfinite(rows["lookup-kv"]["carryover_slope"])


def _contrast_loss(pol, items):
    from harnessrl.policies.scoring import token_logprobs

    total = 0.0
    for c in items:
        for reply, sign in ((c.better, -1.0), (c.worse, 1.0)):
            prompt = pol.encoder.encode_text(pol.encoder.render(c.messages))
            answer = pol.encoder.encode_text(reply)
            ids = torch.tensor([prompt + answer])
            tgt = torch.tensor([[0] * len(prompt) + [1] * len(answer)])
            total = total + sign * token_logprobs(pol.model, ids, torch.ones_like(ids), tgt).logprobs.sum()
    return total / len(items)
