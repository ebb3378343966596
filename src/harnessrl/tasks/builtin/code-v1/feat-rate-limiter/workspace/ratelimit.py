"""Rate limiting helpers."""

import time


def now():
    return time.monotonic()
