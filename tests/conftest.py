"""Test-wide settings: no network, one torch thread, deterministic hashing of nothing global."""

import os

# Hugging Face libraries and Ray probe the network by default; nothing may leave loopback.
for key, value in {
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    "TOKENIZERS_PARALLELISM": "false",
    "MINIWOB_CHROME_BINARY": "/usr/bin/chromium",
    "MINIWOB_CHROMEDRIVER": "/usr/bin/chromedriver",
}.items():
    os.environ.setdefault(key, value)

import signal  # noqa: E402

# A test run started in the background by a script (`cmd &`) begins with SIGINT ignored, and every
# child inherits that; the Ctrl-C tests (study, MiniWoB teardown) need Python's KeyboardInterrupt.
signal.signal(signal.SIGINT, signal.default_int_handler)

import torch  # noqa: E402

torch.set_num_threads(1)
