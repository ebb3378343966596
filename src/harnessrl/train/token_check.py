"""Check an LM's stored training rows against the model: the records are the tokens it acted on.

    report = check_rows(lm, episodes)    # episodes carry `context_resets` (LMPolicy.pop_resets)

For every row (train/sequences.py: the turns of an episode, split where history was rewritten)
the log-probs are recomputed teacher-forced (one forward pass, fp32 on CPU, the sampling
temperature) and compared with the recorded behaviour log-probs on the mask-1 tokens; and every
mask-1 token must have been sampled by the gateway: per call, the generated tokens of the turn
are exactly the `completion_tokens` the program was told, and decode to the text it received.

Per program harness it counts how the calls became rows: `merged` (the call extended the
previous call's prompt and completion token for token: one row), `spliced` (merged, and the
call's text re-tokenised would give other ids than the kept ones: the sampled ids were kept
where the text matched), `split` (the program rewrote its history: a new row from the kept
prefix).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import torch

from harnessrl.episode import Episode
from harnessrl.policies.scoring import token_logprobs
from harnessrl.train.sequences import episode_rows


@torch.no_grad()
def check_rows(lm: Any, episodes: list[Episode], temperature: float | None = None,
               recompute: bool = True) -> dict[str, Any]:
    """{"max_abs_diff", "tokens", "rows", "unsampled", "programs": {harness: {calls, merged, spliced, split}}}.
    recompute=False: rows and counts only (demonstrations encoded by `TeacherForcing` carry no log-probs)."""
    temperature = lm.cfg.temperature if temperature is None else temperature
    worst, tokens, n_rows, unsampled = 0.0, 0, 0, 0
    programs: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "merged": 0, "spliced": 0, "split": 0})
    for i, ep in enumerate(episodes):
        for row in episode_rows(ep, i):
            n_rows += 1
            if not recompute:
                continue
            ids = torch.from_numpy(row.ids).long()[None].to(lm.device)
            mask = torch.from_numpy(row.mask.astype(np.int64))[None].to(lm.device)
            lp = token_logprobs(lm.model, ids, torch.ones_like(ids), mask, temperature).logprobs[0].float().cpu().numpy()
            on = row.mask.astype(bool)
            worst = max(worst, float(np.abs(lp[on] - row.behaviour[on]).max()))
            tokens += int(on.sum())
        calls = ep.metadata.get("calls")
        if calls is None:
            continue
        resets = {int(t) for t, _ in ep.metadata.get("context_resets", [])}
        stats = programs[ep.context.harness_id]
        context: list[int] = []
        for k, (turn, call) in enumerate(zip(ep.turns, calls)):
            gen = turn.token_ids[turn.loss_mask == 1]
            said = lm.encoder.decode([t for t in gen.tolist() if t not in lm.stop_token_ids])
            unsampled += int(len(gen) != call["completion_tokens"] or said != turn.action)
            stats["calls"] += 1
            if k in resets:
                stats["split"] += 1
                context = context[:dict(ep.metadata["context_resets"])[k]]
            elif k:
                stats["merged"] += 1
            context += turn.token_ids.tolist()
            if k and k not in resets:
                prompt = context[:len(context) - len(gen)]
                stats["spliced"] += int(lm.encoder.retokenize(prompt) != prompt)
    return {"max_abs_diff": worst, "tokens": tokens, "rows": n_rows, "unsampled": unsampled,
            "programs": {k: dict(v) for k, v in programs.items()}}
