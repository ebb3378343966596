"""Train / held-out / sealed, by origin: a function's bugs all land in one split.

The split is a pure function of the origin's name (file and function), not of the seed or of
which tasks were generated: it is fixed before any demonstration or training run exists, a
held-out bug is never a train bug in another place, and a new seed or a bigger corpus moves
no existing origin. A two-bug task pairs origins of one split only.
"""

from __future__ import annotations

import hashlib

SPLITS = ("train", "heldout", "sealed")
SHARES = (70, 15, 15)  # percent of origins


def split_of(origin_file: str, function: str) -> str:
    """The split of an origin: its SHA-256 bucket (0-99) against SHARES."""
    bucket = int(hashlib.sha256(f"{origin_file}::{function}".encode()).hexdigest(), 16) % 100
    edge = 0
    for name, share in zip(SPLITS, SHARES):
        edge += share
        if bucket < edge:
            return name
    return SPLITS[-1]
