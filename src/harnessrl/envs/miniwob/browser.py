"""Chromium for MiniWoB++: the one place harnessrl adds browser flags, and a teardown that cannot leak.

miniwob's `SeleniumInstance.create_driver` builds its `ChromeOptions` inside the method and passes
only headless / disable-gpu / no-sandbox, so there is no hook for more flags. `ManagedInstance`
subclasses it and owns the whole start-up instead:

- Chromium gets miniwob's flags plus `EXTRA_CHROMIUM_FLAGS` (no background networking, no
  component updates, no first-run, no /dev/shm) and a private TMPDIR (profile, shared memory)
  that close() deletes;
- chromedriver starts in its own session, so every Chromium process it spawns shares one
  process group that `close()` kills in one call; the crash handlers Chromium double-forks
  out of that group are found by their TMPDIR tag;
- a failed start-up, an exception or a KeyboardInterrupt anywhere still ends in `close()`; an
  exit hook (also in multiprocessing workers) closes any instance the caller forgot; and a
  browser whose owner was SIGKILLed is reaped when any harnessrl process next starts one.

Everything else (reset, step, observations, rewards) is miniwob's own code.
"""

from __future__ import annotations

import atexit
import multiprocessing.util
import os
import shutil
import signal
import tempfile
import threading
import time
import weakref
from pathlib import Path

import psutil
from miniwob.selenium_instance import HTML_DIR, SeleniumInstance
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.wait import WebDriverWait

#: What miniwob passes in headless mode (kept so behaviour matches the package).
MINIWOB_HEADLESS_FLAGS = ("--headless", "--disable-gpu", "--no-sandbox")
#: What harnessrl adds. Without these, Debian's Chromium keeps trying outside addresses
#: (component updater, background requests) and writes large buffers to a small /dev/shm.
#: Even with them its network service still looks up Google hosts (accounts, clients2,
#: android.clients, www); the resolver rule answers every name but localhost with NOTFOUND
#: inside Chromium, so no DNS query or connection leaves loopback (MiniWoB pages are file://).
EXTRA_CHROMIUM_FLAGS = (
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
)
DEFAULT_CHROME_BINARY = "/usr/bin/chromium"
DEFAULT_CHROMEDRIVER = "/usr/bin/chromedriver"
MINIWOB_TASK_DIR = HTML_DIR / "miniwob"
PAGE_LOAD_TIMEOUT_S = 10.0


class BrowserError(RuntimeError):
    """Chromium or chromedriver is missing, misconfigured or failed to start."""


def browser_paths() -> tuple[str, str]:
    """(chromium, chromedriver) from MINIWOB_CHROME_BINARY / MINIWOB_CHROMEDRIVER, Debian paths by default."""
    paths = []
    for var, default, package in (
        ("MINIWOB_CHROME_BINARY", DEFAULT_CHROME_BINARY, "chromium"),
        ("MINIWOB_CHROMEDRIVER", DEFAULT_CHROMEDRIVER, "chromium-driver"),
    ):
        path = os.environ.get(var) or default
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            raise BrowserError(
                f"{var}={path!r} is not an executable file. Install the Debian package "
                f"`{package}` (scripts/setup-system.sh does) or point {var} at the binary."
            )
        paths.append(path)
    return paths[0], paths[1]


def chromium_options(binary: str) -> webdriver.ChromeOptions:
    """The Chromium command line for every MiniWoB browser harnessrl starts.

    No --user-data-dir: with one, headless Chromium's page never has focus and focus-driven
    tasks (focus-text) cannot be solved. chromedriver's scoped profile and Chromium's shared
    memory files go to a private TMPDIR instead, which close() deletes.
    """
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (*MINIWOB_HEADLESS_FLAGS, *EXTRA_CHROMIUM_FLAGS):
        options.add_argument(flag)
    return options


# ----------------------------------------------------------------------------------------
# Live instances, so that an interpreter exit without close() still leaves nothing behind.

_LIVE: weakref.WeakSet[ManagedInstance] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def _running(p: psutil.Process) -> bool:
    """Alive and not a zombie (a helper that exited and awaits its parent's wait())."""
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def close_all() -> None:
    """Close every browser this process started and has not closed yet."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for instance in live:
        instance.close()


atexit.register(close_all)
_EXIT_HOOK_PID: int | None = None


def _ensure_exit_hook() -> None:
    """multiprocessing workers leave through os._exit (no atexit) after running multiprocessing's
    finalizers, whose registry a forked child starts empty: register in each process that starts
    a browser (a module-level hook would be lost in workers forked from a preloaded server)."""
    global _EXIT_HOOK_PID
    if _EXIT_HOOK_PID != os.getpid():
        multiprocessing.util.Finalize(None, close_all, exitpriority=100)
        _EXIT_HOOK_PID = os.getpid()


# ----------------------------------------------------------------------------------------
# Every process of a browser carries TMPDIR=<its private dir>, named after the Python process
# that owns it. Chromium's crash handlers double-fork out of the process tree and group; the
# tag still finds them, and finds browsers whose owner died without closing (SIGKILL).

TMP_PREFIX = "harnessrl-chromium-"
BROWSER_PROCESS_NAMES = ("chromedriver", "chromium", "chrome", "chrome_crashpad_handler", "chrome_crashpad")


def tagged_processes(tmpdir: str | None = None) -> list[tuple[psutil.Process, str]]:
    """(process, its TMPDIR) for browser processes tagged with `tmpdir` (None: any harnessrl tag)."""
    out = []
    for proc in psutil.process_iter(["name"]):
        if not (proc.info["name"] or "").startswith(BROWSER_PROCESS_NAMES):
            continue
        try:
            tag = proc.environ().get("TMPDIR", "")
        except (psutil.Error, OSError):
            continue
        if (tag == tmpdir) if tmpdir else Path(tag).name.startswith(TMP_PREFIX):
            out.append((proc, tag))
    return out


def _owner(tmpdir: str) -> int | None:
    parts = Path(tmpdir).name[len(TMP_PREFIX):].split("-", 1)
    return int(parts[0]) if parts[0].isdigit() else None


def reap_orphans() -> int:
    """Kill browsers (and delete their dirs) whose owning Python process is gone. Returns how many."""
    dead = [(p, tag) for p, tag in tagged_processes() if _owner(tag) is not None and not psutil.pid_exists(_owner(tag))]
    procs = []
    for proc, _ in dead:
        try:
            procs += [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    kill_process_tree(None, procs)
    stale = {tag for _, tag in dead}
    for path in Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*"):
        owner = _owner(str(path))
        if owner is not None and not psutil.pid_exists(owner):
            stale.add(str(path))
    for path in stale:
        remove_dir(path)
    return len(dead)


def remove_dir(path: str) -> None:
    """rmtree, retried: a just-killed Chromium may still be flushing files into it."""
    for _ in range(20):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            return
        time.sleep(0.05)


def kill_process_tree(process, also: list[psutil.Process] = ()) -> None:
    """SIGKILL chromedriver (a `Popen`), its process group, its descendants and `also`; reap them.

    The pid is only trusted while `process.poll()` says it is unreaped (so it cannot have been
    reused); the process group outlives chromedriver while any Chromium member is alive.
    """
    procs = list(also)
    if process is not None:
        if process.poll() is None:
            try:
                root = psutil.Process(process.pid)
                procs += [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                pass
        try:
            os.killpg(process.pid, signal.SIGKILL)  # chromedriver leads its own session
        except (ProcessLookupError, PermissionError):
            pass
    for proc in procs:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    _wait_gone(procs, timeout=5.0)
    if process is not None:
        try:
            process.wait(timeout=5)
        except Exception:
            pass


def _wait_gone(procs: list[psutil.Process], timeout: float) -> None:
    """Until every process has exited. A zombie counts as gone: Chromium's helpers are
    reparented to init once chromedriver dies, and init reaps them in its own time."""
    deadline = time.monotonic() + timeout
    pending = list(procs)
    while pending and time.monotonic() < deadline:
        still = []
        for proc in pending:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    still.append(proc)
            except psutil.NoSuchProcess:
                pass
        pending = still
        if pending:
            time.sleep(0.01)


class ManagedInstance(SeleniumInstance):
    """miniwob's SeleniumInstance with harnessrl's Chromium flags and a leak-proof close()."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._service: ChromeService | None = None
        self._tmpdir: str | None = None
        self._closed = False
        self._close_lock = threading.Lock()

    # miniwob aliases `start` to `create_driver` when not threading; keep that contract.
    def create_driver(self) -> None:
        if hasattr(self, "driver"):
            raise BrowserError(f"instance {self.index} already has a driver")
        binary, chromedriver = browser_paths()
        _ensure_exit_hook()
        reap_orphans()
        self._tmpdir = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-")
        self._service = ChromeService(
            executable_path=chromedriver,
            env={**os.environ, "TMPDIR": self._tmpdir},
            popen_kw={"start_new_session": True},
        )
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            self.driver = webdriver.Chrome(service=self._service, options=chromium_options(binary))
            self._load(self.url)
        except BaseException as error:
            self.close()
            if isinstance(error, Exception) and not isinstance(error, BrowserError):
                raise BrowserError(f"Chromium did not start for MiniWoB task page {self.url}: {error}") from error
            raise

    def _load(self, url: str) -> None:
        """Open a task page and wait for miniwob's sync screen (the page is ready for an episode)."""
        self.driver.get(url)
        WebDriverWait(self.driver, PAGE_LOAD_TIMEOUT_S).until(
            EC.element_to_be_clickable((By.ID, self.SYNC_SCREEN_ID))
        )
        self.inner_width, self.inner_height = self.driver.execute_script(
            "return [window.innerWidth, window.innerHeight];"
        )

    def open_task(self, subdomain: str, field_extractor) -> None:
        """Point this browser at another MiniWoB task: a page load instead of a new browser."""
        self.url = (MINIWOB_TASK_DIR / f"{subdomain}.html").as_uri()
        self.field_extractor = field_extractor
        self.cached_fields = []
        self._load(self.url)

    @property
    def alive(self) -> bool:
        """Not closed, and chromedriver still running."""
        process = getattr(self._service, "process", None) if self._service else None
        return not self._closed and process is not None and process.poll() is None

    @property
    def tmpdir(self) -> str | None:
        """The private TMPDIR every process of this browser carries (its tag)."""
        return self._tmpdir

    @property
    def pids(self) -> list[int]:
        """chromedriver and every Chromium process under it (empty once closed)."""
        if self._service is None or getattr(self._service, "process", None) is None:
            return []
        try:
            root = psutil.Process(self._service.process.pid)
            return [p.pid for p in (root, *root.children(recursive=True)) if _running(p)]
        except psutil.NoSuchProcess:
            return []

    def close(self) -> None:
        """Kill chromedriver's process group and delete the TMPDIR. Safe twice, from any thread.

        No WebDriver quit: Chromium keeps nothing worth a graceful exit (profile and shared
        memory live in our TMPDIR), and selenium's quit() polls chromedriver for a second.
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self.died = True
            process = getattr(self._service, "process", None) if self._service else None
            survivors: list[psutil.Process] = []
            try:
                if process is not None and process.poll() is None:
                    survivors = psutil.Process(process.pid).children(recursive=True)
                if getattr(self, "driver", None) is not None:
                    self.driver.command_executor.close()  # the HTTP pool to chromedriver
            except Exception:
                pass
            finally:
                kill_process_tree(process, survivors)
                if self._tmpdir:  # what left the tree: Chromium's crash handlers
                    kill_process_tree(None, [p for p, _ in tagged_processes(self._tmpdir)])
                    remove_dir(self._tmpdir)
                with _LIVE_LOCK:
                    _LIVE.discard(self)
