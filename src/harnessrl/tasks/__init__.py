"""Tasks and suites on disk, the bubblewrap sandbox that runs agent commands, built-in suites.

Modules, lowest first: workspace/fileops (a per-episode copy of a task's files and safe file
operations), process/sandbox (bubblewrap around one command or a long-lived process),
terminal (tmux inside the sandbox), base (Task, Suite, the suite.toml format), foreign_env
(a foreign task's Dockerfile and scripts in sandbox terms), foreign (Terminal-Bench and Harbor
folders), loaders (load_suite: any of them by name or folder), scoring (hidden tests -> outcome), runtime (one task's
live environment for one episode: the API harnesses build on).
"""

from harnessrl.tasks.base import Replace, Rejection, Solution, Suite, SuiteError, Task, WriteFile, builtin_suites
from harnessrl.tasks.loaders import load_suite
from harnessrl.tasks.runtime import TaskRuntime, TaskSetupError
from harnessrl.tasks.sandbox import Bind, Limits, Sandbox, SandboxResult, SandboxUnavailable
from harnessrl.tasks.scoring import OUTCOMES, Score, score_workspace
from harnessrl.tasks.terminal import TmuxTerminal
from harnessrl.tasks.workspace import EditError, Workspace, WorkspaceError

__all__ = [
    "OUTCOMES", "Bind", "EditError", "Limits", "Rejection", "Replace", "Sandbox", "SandboxResult",
    "SandboxUnavailable", "Score", "Solution", "Suite", "SuiteError", "Task", "TaskRuntime", "TaskSetupError",
    "TmuxTerminal", "Workspace", "WorkspaceError", "WriteFile", "builtin_suites", "load_suite", "score_workspace",
]
