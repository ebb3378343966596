"""The three quickstart scripts run as printed in docs/quickstart.md, and print what the page shows."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "quickstart.md").read_text()


@pytest.mark.parametrize("script", ["harness_variant.py", "suite_from_folder.py", "custom_reward.py"])
@pytest.mark.sandbox
def test_quickstart_script_runs_and_prints_the_page_output(script, tmp_path):
    source = (ROOT / "examples" / script).read_text()
    assert f"```python\n{source}```" in PAGE  # the page shows the file as it is
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, str(ROOT / "examples" / script), str(tmp_path / "qs")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    section = PAGE[PAGE.index(f"```python\n{source}"):]
    shown = re.search(r"Output[^\n]*\n\n```\n(.*?)```", section, re.S).group(1)
    assert out.stdout == shown
