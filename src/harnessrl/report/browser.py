"""Open a written HTML report in real headless Chromium and say what a reader would see wrong.

    check = check_report("runs/study/report.html")     # writes runs/study/report.screenshot.png
    if not check.ok:
        print("\\n".join(check.problems()))

The page is loaded from a file:// URL with the Chromium flags of harnessrl's MiniWoB browsers
(`harnessrl.envs.miniwob.browser.chromium_options`: headless, no background networking, no
component updates, and a host-resolver rule that fails every name but localhost), so opening a
report contacts nothing but loopback, and a report that tries to fetch anything shows up as a
broken image or a console error instead of a silent download.

What counts as a problem: the page shows no text; an <img> that has not loaded (`complete` and
`naturalWidth > 0`) within the timeout; any SEVERE entry in Chromium's browser log (uncaught
exceptions, console.error, resources that failed to load). The screenshot is of the whole page:
the window is resized to the document's height (capped) before it is taken.

chromedriver runs in its own session with a private, tagged TMPDIR, like a MiniWoB browser, so
`kill_process_tree` ends every process of it in the `finally`, also after an error or Ctrl-C, and
a browser left behind by a SIGKILLed process is reaped by the next harnessrl browser start.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service as ChromeService

from harnessrl.envs.miniwob.browser import (
    TMP_PREFIX,
    BrowserError,
    browser_paths,
    chromium_options,
    kill_process_tree,
    reap_orphans,
    remove_dir,
    tagged_processes,
)

WINDOW_WIDTH = 1280  # Report's body is at most 1100 px wide plus margins
MAX_SCREENSHOT_HEIGHT = 16000  # taller pages are cut off in the screenshot (and say so); Chromium caps near 16384
MIN_WINDOW_HEIGHT = 400

__all__ = ["BrowserCheck", "BrowserError", "check_report", "default_screenshot_path"]


@dataclass
class BrowserCheck:
    """What Chromium made of one HTML file."""

    html_path: Path
    title: str
    text_chars: int  # length of document.body.innerText: 0 means the page shows nothing
    images_total: int
    images_loaded: int
    broken_images: list[str] = field(default_factory=list)  # '#<position> <alt or src>' per <img> that did not load
    console_errors: list[str] = field(default_factory=list)  # SEVERE browser-log messages
    console_warnings: list[str] = field(default_factory=list)  # WARNING ones: shown, not a problem
    screenshot: Path | None = None
    page_height: int = 0  # document scroll height in CSS px
    screenshot_truncated: bool = False  # the page was taller than MAX_SCREENSHOT_HEIGHT
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems()

    def problems(self) -> list[str]:
        """One readable line per thing wrong with the page (empty: the report renders cleanly)."""
        out = []
        if self.text_chars == 0:
            out.append(f"{self.html_path}: the page shows no text")
        for name in self.broken_images:
            out.append(f"{self.html_path}: image {name} did not load")
        for message in self.console_errors:
            out.append(f"{self.html_path}: console error: {message}")
        return out

    def summary(self) -> str:
        state = "ok" if self.ok else f"{len(self.problems())} problem(s)"
        shot = f", screenshot {self.screenshot}" if self.screenshot else ""
        return (f"{self.html_path}: {state}; {self.images_loaded}/{self.images_total} images loaded, "
                f"{len(self.console_errors)} console errors{shot} ({self.seconds:.1f} s)")


def default_screenshot_path(html_path: str | Path) -> Path:
    """`report.html` -> `report.screenshot.png` in the same folder (figures there are `<name>.png`)."""
    html_path = Path(html_path)
    return html_path.with_name(f"{html_path.stem}.screenshot.png")


def check_report(html_path: str | Path, screenshot: str | Path | bool | None = None, timeout: float = 30.0,
                 width: int = WINDOW_WIDTH, max_height: int = MAX_SCREENSHOT_HEIGHT) -> BrowserCheck:
    """Load `html_path` in headless Chromium, wait for its images, screenshot it, read the console.

    screenshot: where to write the full-page PNG; None: `default_screenshot_path(html_path)`;
    False: none. timeout: seconds for the page load and for the images to finish loading.
    Raises BrowserError when Chromium or chromedriver is missing or does not start, and
    FileNotFoundError when there is no such HTML file; problems with the page are in the result.
    """
    html_path = Path(html_path).resolve()
    if not html_path.is_file():
        raise FileNotFoundError(f"no HTML report at {html_path}: write it first (Report.write(path))")
    if screenshot is False:
        shot_path = None
    else:
        shot_path = default_screenshot_path(html_path) if screenshot in (None, True) else Path(screenshot)
    start = time.monotonic()
    with _Chromium(timeout) as driver:
        driver.get(html_path.as_uri())
        images = _wait_for_images(driver, timeout)
        title, text_chars = driver.execute_script(_TEXT_JS)
        page_height, truncated = _fit_window_to_page(driver, width, max_height)
        if shot_path is not None:
            shot_path.parent.mkdir(parents=True, exist_ok=True)
            if not driver.save_screenshot(str(shot_path)):
                raise BrowserError(f"Chromium could not write the screenshot {shot_path}")
        log = driver.get_log("browser")  # read last: resizing can log too
    broken = [f"#{i + 1} {_describe(alt, src)}" for i, (done, natural_width, alt, src) in enumerate(images)
              if not (done and natural_width > 0)]
    return BrowserCheck(
        html_path=html_path, title=title, text_chars=int(text_chars), images_total=len(images),
        images_loaded=len(images) - len(broken), broken_images=broken,
        console_errors=[entry["message"] for entry in log if entry.get("level") == "SEVERE"],
        console_warnings=[entry["message"] for entry in log if entry.get("level") == "WARNING"],
        screenshot=shot_path, page_height=page_height, screenshot_truncated=truncated,
        seconds=time.monotonic() - start,
    )


# ----------------------------------------------------------------------------------------
# The page: images, size, screenshot.

_IMAGES_JS = ("return Array.from(document.images)"
              ".map(i => [i.complete, i.naturalWidth, i.alt || '', i.currentSrc || i.src || '']);")
_TEXT_JS = "return [document.title, ((document.body && document.body.innerText) || '').trim().length];"


def _wait_for_images(driver, timeout: float) -> list[list]:
    """[complete, naturalWidth, alt, src] per <img>, once every one has finished (loaded or failed)."""
    deadline = time.monotonic() + timeout
    while True:
        images = driver.execute_script(_IMAGES_JS)
        if all(done for done, *_ in images) or time.monotonic() > deadline:
            return images
        time.sleep(0.05)


def _fit_window_to_page(driver, width: int, max_height: int) -> tuple[int, bool]:
    """Resize the window so the viewport holds the whole page (at most max_height). Returns
    (page height, whether it was cut). The width goes first: it reflows the page and so its height."""
    driver.set_window_size(width, MIN_WINDOW_HEIGHT)
    chrome_px, page_height = driver.execute_script(
        "return [window.outerHeight - window.innerHeight, document.documentElement.scrollHeight];")
    height = max(MIN_WINDOW_HEIGHT, min(int(page_height), max_height))
    driver.set_window_size(width, height + max(0, int(chrome_px)))
    return int(page_height), page_height > max_height


def _describe(alt: str, src: str) -> str:
    """An image by its alt text, else its src (a data: URL shortened to its head)."""
    if alt:
        return repr(alt)
    return src[:40] + "..." if src.startswith("data:") and len(src) > 43 else src


# ----------------------------------------------------------------------------------------
# The browser: started like a MiniWoB one, torn down whatever happens.


class _Chromium:
    """A WebDriver for Chromium with the browser log on; every process gone after the `with`."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.service: ChromeService | None = None
        self.driver: webdriver.Chrome | None = None
        self.tmpdir: str | None = None

    def __enter__(self) -> webdriver.Chrome:
        binary, chromedriver = browser_paths()  # BrowserError naming the apt package and setup script
        reap_orphans()
        self.tmpdir = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-")
        options = chromium_options(binary)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.service = ChromeService(executable_path=chromedriver, env={**os.environ, "TMPDIR": self.tmpdir},
                                     popen_kw={"start_new_session": True})
        try:
            self.driver = webdriver.Chrome(service=self.service, options=options)
            self.driver.set_page_load_timeout(self.timeout)
            self.driver.set_script_timeout(self.timeout)
        except BaseException as error:
            self.close()
            if isinstance(error, WebDriverException):
                raise BrowserError(f"Chromium did not start ({binary} via {chromedriver}): {error.msg}") from error
            raise
        return self.driver

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Kill chromedriver's process group, Chromium's double-forked helpers, and the TMPDIR.
        No WebDriver quit(): it waits on chromedriver, and the profile is in our TMPDIR anyway."""
        process = getattr(self.service, "process", None) if self.service else None
        survivors: list[psutil.Process] = []
        try:
            if process is not None and process.poll() is None:
                survivors = psutil.Process(process.pid).children(recursive=True)
            if self.driver is not None:
                self.driver.command_executor.close()
        except Exception:
            pass
        finally:
            kill_process_tree(process, survivors)
            if self.tmpdir:
                kill_process_tree(None, [p for p, _ in tagged_processes(self.tmpdir)])
                remove_dir(self.tmpdir)
            self.driver = None


def main(argv: list[str] | None = None) -> int:
    """`python -m harnessrl.report.browser REPORT.html...`: check each, exit 1 on any problem."""
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m harnessrl.report.browser REPORT.html [...]", file=sys.stderr)
        return 2
    failed = False
    for path in paths:
        check = check_report(path)
        print(check.summary())
        for line in check.problems():
            print("  " + line)
        failed |= not check.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
