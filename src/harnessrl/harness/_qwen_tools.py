"""Qwen Code's read-only search tools — `list_directory`, `glob`, `grep_search` (called
`search_file_content` before Qwen Code 0.1) — run inside the sandbox, with the result texts
laid out as Qwen Code lays them out (our own wording).

Each tool is one run of the sandbox's Python over a small script (below) that prints JSON; the
host only formats it. So a pattern or path the model writes never touches the host's files,
and a slow regex is bounded by the command timeout like any command.

  list_directory{path, ignore?}               "Directory listing for P:" then `[DIR] name`
                                              lines, directories first, then files, by name
  glob{pattern, path?, case_sensitive?}       "Found N file(s) matching "PAT" within P, sorted by
                                              modification time (newest first):" + absolute paths;
                                              `*` matches across directories (fnmatch), `**/` also
                                              matches none; case-insensitive unless asked
  grep_search{pattern, path?, include?, limit?}
                                              "Found N matches for pattern "PAT" in path "P"": per
                                              file "File: rel" then "L<n>: line", blocks between
                                              `---`; at most `limit` (default 20, max 100) matches
`.git` and `node_modules` are skipped, as Qwen Code skips them by default.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import Shell, resolve, shown

SEARCH_TOOLS = ("list_directory", "glob", "grep_search", "search_file_content")
PARAMS = {"list_directory": {"path": str, "ignore": list},
          "glob": {"pattern": str, "path": str, "case_sensitive": bool},
          "grep_search": {"pattern": str, "path": str, "include": str, "limit": int}}
PARAMS["search_file_content"] = PARAMS["grep_search"] | {"maxResults": int}
REQUIRED = {"list_directory": ("path",), "glob": ("pattern",), "grep_search": ("pattern",),
            "search_file_content": ("pattern",)}
MAX_MATCHES = 100

_SCRIPT = r'''
import fnmatch, glob, json, os, re, sys
a = json.loads(sys.argv[1]); tool = a["tool"]; root = a["root"]
SKIP = {".git", "node_modules"}
def out(**k): print(json.dumps(k)); sys.exit(0)
if not os.path.isdir(root): out(error="not_dir")
if tool == "list_directory":
    ignore = a.get("ignore") or []
    names = [n for n in os.listdir(root) if not any(fnmatch.fnmatch(n, p) for p in ignore)]
    out(entries=[[n, os.path.isdir(os.path.join(root, n))] for n in names])
if tool == "glob":
    flags = 0 if a.get("case_sensitive") else re.IGNORECASE
    pats = {a["pattern"], a["pattern"].replace("**/", "")}  # `**/` may also match no directory
    rxs = [re.compile(fnmatch.translate(p), flags) for p in pats]
    hits = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP]
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root)
            if any(rx.match(rel) for rx in rxs):
                hits.append(rel)
    hits.sort(key=lambda r: (-os.path.getmtime(os.path.join(root, r)), r))
    out(files=hits)
try:
    rx = re.compile(a["pattern"])
except re.error as e:
    out(error="bad_regex", detail=str(e))
found, total = [], 0
for d, dirs, files in os.walk(root):
    dirs[:] = sorted(x for x in dirs if x not in SKIP)
    for f in sorted(files):
        p = os.path.join(d, f); rel = os.path.relpath(p, root)
        if a.get("include") and not (fnmatch.fnmatch(rel, a["include"]) or fnmatch.fnmatch(f, a["include"])):
            continue
        try:
            with open(p, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if rx.search(line):
                        total += 1
                        if len(found) < a["limit"]:
                            found.append([rel, n, line.rstrip("\n")])
        except (UnicodeDecodeError, OSError):
            continue
out(matches=found, total=total)
'''


def run_search(env: Any, shell: Shell, name: str, args: dict[str, Any]) -> tuple[str, bool]:
    """Run one search tool; (result text, ok)."""
    tool = "grep_search" if name == "search_file_content" else name
    where = args.get("path") or shown("")
    rel = resolve(where) if where.startswith("/") else None
    if rel is None:
        return f"Path must be absolute and within the project root ({shown('')}): {where}", False
    limit = min(int(args.get("limit") or args.get("maxResults") or 20), MAX_MATCHES)
    payload = {"tool": tool, "root": shown(rel), "pattern": args.get("pattern", ""), "ignore": args.get("ignore"),
               "case_sensitive": bool(args.get("case_sensitive")), "include": args.get("include"), "limit": limit}
    out = shell.run(f"{ws.python(env)} -c {shlex.quote(_SCRIPT)} {shlex.quote(json.dumps(payload))}", keep_cwd=False)
    if out.status == "timeout":
        return f"The search was stopped after {shell.timeout:g} s; narrow the pattern or the path.", False
    try:
        result = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"Error: the search failed: {(out.stderr or out.stdout).strip()[-500:]}", False
    if result.get("error") == "not_dir":
        return f"Error: directory not found or not a directory: {where}", False
    if result.get("error") == "bad_regex":
        return f"Invalid regular expression pattern: {args['pattern']}. Error: {result.get('detail')}", False
    return _format(tool, args, where, result, limit), True


def _format(tool: str, args: dict[str, Any], where: str, result: dict[str, Any], limit: int) -> str:
    if tool == "list_directory":
        entries = sorted(result["entries"], key=lambda e: (not e[1], e[0]))
        if not entries:
            return f"Directory {where} is empty."
        return f"Directory listing for {where}:\n" + "\n".join(("[DIR] " if d else "") + n for n, d in entries)
    if tool == "glob":
        files = result["files"]
        if not files:
            return f'No files found matching pattern "{args["pattern"]}" within {where}'
        base = where.rstrip("/")
        return (f'Found {len(files)} file(s) matching "{args["pattern"]}" within {where}, sorted by modification '
                "time (newest first):\n" + "\n".join(f"{base}/{f}" for f in files))
    matches, total = result["matches"], result["total"]
    shown_where = "." if where.rstrip("/") == shown("") else where
    filt = f' (filter: "{args["include"]}")' if args.get("include") else ""
    if not matches:
        return f'No matches found for pattern "{args["pattern"]}" in path "{shown_where}"{filt}.'
    lines, current = [f'Found {total} match{"es" if total != 1 else ""} for pattern "{args["pattern"]}" in path '
                      f'"{shown_where}"{filt}:', "---"], None
    for rel, n, text in matches:
        if rel != current:
            if current is not None:
                lines.append("---")
            lines.append(f"File: {rel}")
            current = rel
        lines.append(f"L{n}: {text}")
    lines.append("---")
    if total > len(matches):
        lines.append(f"\nWARNING: Results truncated to {limit} of {total} matches. To see more: use a more specific "
                     "pattern, filter files with 'include' (e.g. \"*.py\"), search a narrower 'path', or raise "
                     f"'limit' (at most {MAX_MATCHES}).")
    return "\n".join(lines)
