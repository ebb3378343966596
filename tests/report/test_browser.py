"""Reports in real headless Chromium: a clean Report passes, broken figures and script errors are
caught, and every browser process is gone afterwards (also when the check fails midway)."""

from __future__ import annotations

import base64
import io
import os
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import psutil
import pytest
from PIL import Image

from harnessrl.config import Config
from harnessrl.envs.miniwob.browser import TMP_PREFIX, tagged_processes
from harnessrl.report.browser import BrowserError, check_report, default_screenshot_path
from harnessrl.report.html import Report

pytestmark = pytest.mark.browser
BROWSER_NAMES = ("chromium", "chromedriver", "chrome", "chrome_crashpad_handler")


class StudyCfg(Config):
    seed: int = 0
    harness: str = "aider"


def _browser_processes() -> set[tuple[int, str]]:
    """Live Chromium/chromedriver processes below this process, and the ones tagged as this
    process's (Chromium's crash handlers leave the tree). Other pytest workers' browsers are not ours."""
    mine = f"{TMP_PREFIX}{os.getpid()}-"
    out = {(p.pid, tag) for p, tag in tagged_processes() if Path(tag).name.startswith(mine)}
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.name() in BROWSER_NAMES:
                out.add((proc.pid, ""))
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture
def no_leak():
    """Fails the test if it leaves a browser process behind."""
    before = _browser_processes()
    yield
    left = _browser_processes() - before
    assert not left, f"browser processes left running: {left}"


def _png(color: str = "tab:blue") -> bytes:
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.bar([0], [1], color=color)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=40)
    plt.close(fig)
    return buf.getvalue()


def _page(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "page.html"
    path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>page</title></head>"
                    f"<body><h1>A page</h1>{body}</body></html>", encoding="utf-8")
    return path


def test_report_with_figures_and_table_renders_cleanly(tmp_path, no_leak):
    rep = Report("Browser check", claim="Figures load in a real browser.", scale_note="tiny")
    rep.section("Curves", "Two figures and a table.")
    x = np.linspace(0, 6, 50)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(x, np.sin(x), label="sin")
    ax.legend()
    rep.figure(fig, "A sine curve", name="sine")
    fig, axes = plt.subplots(1, 2, figsize=(7, 3))
    axes[0].bar(["a", "b", "c"], [3, 1, 2])
    axes[1].imshow(np.arange(64).reshape(8, 8))
    rep.figure(fig, "Bars and a heat map", name="bars")
    rep.table([{"harness": h, "solve_rate": r, "n": 20} for h, r in (("aider", 0.55), ("swe", 0.4))], caption="Cells")
    rep.config(StudyCfg())
    rep.reproduce("harnessrl study", seeds=[0], store="runs/store")
    path = rep.write(tmp_path / "study" / "report.html")

    check = check_report(path)

    assert check.problems() == [] and check.ok, check.problems()
    assert check.title == "Browser check" and check.text_chars > 200
    assert (check.images_total, check.images_loaded, check.broken_images) == (2, 2, [])
    assert check.console_errors == []
    assert check.screenshot == default_screenshot_path(path) == path.parent / "report.screenshot.png"
    data = check.screenshot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    shot = Image.open(io.BytesIO(data))
    # full page: the viewport was grown to the document's height, well past a default window
    assert shot.width == 1280 and abs(shot.height - check.page_height) <= 2 and check.page_height > 900
    assert len(shot.convert("RGB").getcolors(maxcolors=1 << 20) or range(1 << 20)) > 50  # not a blank frame
    assert not check.screenshot_truncated


def test_broken_and_missing_images_are_reported(tmp_path, no_leak):
    good = base64.b64encode(_png()).decode()
    path = _page(tmp_path, f'<img alt="good" src="data:image/png;base64,{good}">'
                           '<img alt="broken figure" src="data:image/png;base64,AAAA">'
                           '<img src="missing.png">')
    check = check_report(path, screenshot=tmp_path / "shots" / "page.png", timeout=10)

    assert (check.images_total, check.images_loaded) == (3, 1)
    assert check.broken_images == ["#2 'broken figure'", f"#3 {(tmp_path / 'missing.png').as_uri()}"]
    # a missing file is also a failed resource load in the console; a bad data: URL is not
    assert len(check.console_errors) == 1 and "ERR_FILE_NOT_FOUND" in check.console_errors[0]
    assert not check.ok
    problems = check.problems()
    assert any("image #2 'broken figure' did not load" in p for p in problems)
    assert (tmp_path / "shots" / "page.png").read_bytes()[:4] == b"\x89PNG"


def test_script_errors_and_console_errors_are_reported(tmp_path, no_leak):
    path = _page(tmp_path, "<script>console.warn('just a warning');console.error('figure 3 is missing')</script>"
                           "<script>throw new Error('boom')</script><p>text</p>")
    check = check_report(path, screenshot=False)

    assert check.screenshot is None and not default_screenshot_path(path).exists()
    assert check.images_total == 0 and check.broken_images == []
    assert len(check.console_errors) == 2, check.console_errors
    assert any("figure 3 is missing" in m for m in check.console_errors)
    assert any(re.search(r"Uncaught Error: boom", m) for m in check.console_errors)
    assert any("just a warning" in m for m in check.console_warnings)  # shown, not a problem
    assert not check.ok and len(check.problems()) == 2


def test_empty_page_is_a_problem(tmp_path, no_leak):
    path = tmp_path / "empty.html"
    path.write_text("<!DOCTYPE html><html><head><title>nothing</title></head><body></body></html>")
    check = check_report(path, screenshot=False)
    assert check.text_chars == 0 and check.problems() == [f"{path}: the page shows no text"]


def test_browser_is_reaped_when_the_check_fails_midway(tmp_path, no_leak):
    path = _page(tmp_path, "<p>fine</p>")
    (tmp_path / "taken.png").mkdir()  # a folder where the screenshot should go: writing it fails
    with pytest.raises(BrowserError, match="screenshot"):
        check_report(path, screenshot=tmp_path / "taken.png")


def test_missing_chromium_names_the_package_and_setup_script(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIWOB_CHROME_BINARY", str(tmp_path / "no-chromium"))
    path = _page(tmp_path, "<p>x</p>")
    with pytest.raises(BrowserError, match=r"`chromium`.*scripts/setup-system\.sh"):
        check_report(path)


def test_missing_report_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no HTML report"):
        check_report(tmp_path / "nope.html")
