"""CLI command groups. Each module exposes a typer `app` that `harnessrl.cli` mounts.

Commands sit on top of every stage: they may import anything; nothing imports them.
"""
