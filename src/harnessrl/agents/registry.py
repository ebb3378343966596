"""The real agent programs by name: a view of `harnessrl.programs`, where each program's module
holds its pin, launch and tool table. `ProgramSpec` is the old name of `Program`."""

from __future__ import annotations

from harnessrl.programs import PROGRAMS, Program, all_programs, program

ProgramSpec = Program

__all__ = ["PROGRAMS", "ProgramSpec", "all_programs", "program"]
