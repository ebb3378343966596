"""A tiny chat LM built locally for tests (tokenizer trained here, random Qwen2-style weights)."""

from __future__ import annotations

from pathlib import Path

from harnessrl.policies.tiny import build_tiny_lm

WORDS = "look lamp box door key cup answer red blue green small large the is of what color size".split()


def corpus() -> list[str]:
    lines = [f"The {a} is {b}. look {a} answer {b}" for a in WORDS[:6] for b in WORDS[8:12]]
    lines += ["You are an agent. Reply with one command per turn.", "What color is the lamp?", "Result: nothing here."]
    return lines * 10


def build(root: Path, size: str = "micro", seed: int = 0) -> Path:
    out = root / f"tiny-{size}-{seed}"
    if not (out / "config.json").exists():
        build_tiny_lm(out, corpus(), size=size, vocab_size=400, seed=seed, max_positions=512)
    return out
