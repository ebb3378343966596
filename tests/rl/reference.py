"""Slow references written with plain Python loops over floats: what `harnessrl.rl` must equal."""

from __future__ import annotations

import math


def gae(rewards, values, mask, gamma, lam, terminated, truncated, final_values, last_values):
    """Per row: keep the action (unmasked) steps in order, credit masked rewards to the action
    before them (dropped before the first action or across an episode end), then run textbook GAE."""
    B, T = len(rewards), len(rewards[0])
    adv = [[0.0] * T for _ in range(B)]
    ret = [[0.0] * T for _ in range(B)]
    for b in range(B):
        steps = [t for t in range(T) if mask[b][t]]
        r = {t: rewards[b][t] for t in steps}
        for i, t in enumerate(steps):
            if terminated[b][t] or truncated[b][t]:
                continue
            nxt = steps[i + 1] if i + 1 < len(steps) else T
            for u in range(t + 1, nxt):
                r[t] += rewards[b][u]
        running = 0.0
        for i in range(len(steps) - 1, -1, -1):
            t = steps[i]
            if terminated[b][t]:
                next_value, running = 0.0, 0.0
            elif truncated[b][t]:
                next_value, running = final_values[b][t], 0.0
            elif i + 1 < len(steps):
                next_value = values[b][steps[i + 1]]
            else:
                next_value = last_values[b]
            delta = r[t] + gamma * next_value - values[b][t]
            running = delta + gamma * lam * running
            adv[b][t] = running
            ret[b][t] = running + values[b][t]
    return adv, ret


def groups(keys):
    out = {}
    for i, k in enumerate(keys):
        out.setdefault(k, []).append(i)
    return out


def _std(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def grpo(rewards, keys, scale, eps):
    adv = [0.0] * len(rewards)
    batch_std = _std(rewards) if len(rewards) > 1 else 0.0
    for idx in groups(keys).values():
        rs = [rewards[i] for i in idx]
        if len(rs) < 2 or max(rs) == min(rs):
            continue
        m = sum(rs) / len(rs)
        for i in idx:
            if scale == "group":
                adv[i] = (rewards[i] - m) / (_std(rs) + eps)
            elif scale == "batch":
                adv[i] = (rewards[i] - m) / (batch_std + eps)
            else:
                adv[i] = rewards[i] - m
    return adv


def rloo(rewards, keys):
    adv = [0.0] * len(rewards)
    for idx in groups(keys).values():
        rs = [rewards[i] for i in idx]
        if len(rs) < 2 or max(rs) == min(rs):
            continue
        for i in idx:
            others = [rewards[j] for j in idx if j != i]
            adv[i] = rewards[i] - sum(others) / len(others)
    return adv


def aggregate(loss, mask, mode, norm=None):
    B, T = len(loss), len(loss[0])
    if mode == "token-mean":
        n = sum(mask[b][t] for b in range(B) for t in range(T))
        return sum(loss[b][t] * mask[b][t] for b in range(B) for t in range(T)) / max(n, 1)
    if mode == "seq-mean-token-sum-norm":
        return sum(loss[b][t] * mask[b][t] for b in range(B) for t in range(T)) / (B * (T if norm is None else norm))
    per_seq = []
    for b in range(B):
        n = sum(mask[b])
        if n == 0:
            continue
        s = sum(loss[b][t] * mask[b][t] for t in range(T))
        per_seq.append(s / n if mode == "seq-mean-token-mean" else s)
    return sum(per_seq) / len(per_seq) if per_seq else 0.0


def clipped(ratio, a, lo, hi, dual=None):
    loss = max(-a * ratio, -a * min(max(ratio, 1 - lo), 1 + hi))
    if dual is not None and a < 0:
        loss = min(loss, -a * dual)
    return loss


def ppo(logp, old, adv, mask, lo, hi, dual, agg, norm=None):
    B, T = len(logp), len(logp[0])
    per_token = [[clipped(math.exp(logp[b][t] - old[b][t]), adv[b][t], lo, hi, dual) for t in range(T)] for b in range(B)]
    return aggregate(per_token, mask, agg, norm)


def seq_ratio(logp, old, mask_row):
    n = sum(mask_row)
    s = sum((lp - o) * m for lp, o, m in zip(logp, old, mask_row))
    return math.exp(min(s / max(n, 1), 10.0))


def gspo(logp, old, adv, mask, lo, hi):
    """Paper form: (1/G) sum over non-empty sequences of max(-A s, -A clip(s))."""
    out = []
    for b in range(len(logp)):
        if sum(mask[b]) == 0:
            continue
        out.append(clipped(seq_ratio(logp[b], old[b], mask[b]), adv[b], lo, hi))
    return sum(out) / len(out) if out else 0.0


def kl(x, kind):
    if kind == "k1":
        return x
    if kind == "k2":
        return 0.5 * x * x
    x = min(max(x, -20.0), 20.0)
    return min(max(math.exp(-x) + x - 1.0, -10.0), 10.0)


def value_loss(v, v_old, ret, mask, clip, agg):
    B, T = len(v), len(v[0])
    per = [[0.0] * T for _ in range(B)]
    for b in range(B):
        for t in range(T):
            e = (v[b][t] - ret[b][t]) ** 2
            if clip is not None:
                vc = v_old[b][t] + min(max(v[b][t] - v_old[b][t], -clip), clip)
                e = max(e, (vc - ret[b][t]) ** 2)
            per[b][t] = e
    return 0.5 * aggregate(per, mask, agg)
