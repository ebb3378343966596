"""Harbor's verifier reward files, read so that code the tests run can neither forge nor redirect them.

A Harbor task's tests/test.sh writes its verdict into /logs/verifier: reward.txt (one number) or
reward.json (named rewards). The grader (grader.py) gives the script a fresh directory of its own
and reads the files back on the host with the functions here: no symlink followed, only a small
regular file, only finite numbers in [0, 1]; anything else is no reward, scored as test_error.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat

REWARD_MAX_BYTES = 4096


def read_reward_file(logs: str | os.PathLike) -> tuple[float | None, str]:
    """The one reward of Harbor's reward files in `logs`: (reward, "") or (None, why not).
    read_rewards gives every named reward; this is its "reward" entry, or their mean."""
    rewards, why = read_rewards(logs)
    return (None, why) if rewards is None else (one_reward(rewards), "")


def one_reward(rewards: dict[str, float]) -> float:
    """The episode's one reward from named rewards: the one named "reward", else their mean."""
    return rewards["reward"] if "reward" in rewards else sum(rewards.values()) / len(rewards)


def read_rewards(logs: str | os.PathLike) -> tuple[dict[str, float] | None, str]:
    """Harbor's verifier output in `logs`: ({name: reward}, "") or (None, why not).

    Harbor's contract: tests/test.sh writes reward.txt (one number, the reward "reward") or
    reward.json (an object of named rewards, e.g. {"correctness": 1, "performance": 0}).
    Harbor reads reward.txt first; here both may exist only when they agree on "reward" (a
    test script that writes both), so code the tests run cannot override the script's verdict
    by adding the other file. Opened with O_NOFOLLOW relative to the directory (itself opened
    with O_NOFOLLOW), so a symlink to a host file is refused, never read; only a regular file of
    at most REWARD_MAX_BYTES counts; every reward must be a finite number in [0, 1]. Missing,
    a directory, a FIFO, anything else: None, which the caller scores as test_error."""
    try:
        dfd = os.open(logs, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        return None, f"reward directory unreadable ({err.strerror})"
    try:
        found = {}
        for name in ("reward.txt", "reward.json"):
            try:
                os.lstat(name, dir_fd=dfd)
            except FileNotFoundError:
                continue
            found[name] = _read_small(dfd, name)
    finally:
        os.close(dfd)
    if not found:
        return None, "no reward file"
    parsed: dict[str, dict[str, float]] = {}
    for name, (data, why) in found.items():
        if data is None:
            return None, f"{name}: {why}"
        try:
            parsed[name] = _parse_rewards(name, data)
        except (ValueError, UnicodeDecodeError, RecursionError) as err:
            return None, f"{name}: {str(err)[:80]}"
    if len(parsed) == 2 and parsed["reward.txt"]["reward"] != parsed["reward.json"].get("reward"):
        return None, "reward.txt and reward.json disagree on the reward"
    return parsed.get("reward.txt") or parsed["reward.json"], ""


def _parse_rewards(name: str, data: bytes) -> dict[str, float]:
    text = data.decode("utf-8").strip()
    if name == "reward.txt":
        try:
            rewards = {"reward": float(text)}
        except ValueError:
            raise ValueError("malformed (not one number)") from None
    else:
        try:
            obj = json.loads(text)
        except ValueError as err:
            raise ValueError(f"malformed ({err})") from None
        if not isinstance(obj, dict) or not obj:
            raise ValueError("malformed (not an object of named rewards)")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in obj.values()):
            raise ValueError("malformed (a reward that is not a number)")
        rewards = {str(k): float(v) for k, v in obj.items()}
    for key, value in rewards.items():
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"reward {key}={value!r} outside [0, 1]")
    return rewards


def _read_small(dfd: int, name: str) -> tuple[bytes | None, str]:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError as err:
        return None, "a symlink (refused)" if err.errno == errno.ELOOP else f"cannot open ({err.strerror})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "not a regular file"
        if st.st_size > REWARD_MAX_BYTES:
            return None, f"larger than {REWARD_MAX_BYTES} bytes"
        data = os.read(fd, REWARD_MAX_BYTES + 1)
        return (None, f"larger than {REWARD_MAX_BYTES} bytes") if len(data) > REWARD_MAX_BYTES else (data, "")
    finally:
        os.close(fd)


__all__ = ["REWARD_MAX_BYTES", "one_reward", "read_reward_file", "read_rewards"]
