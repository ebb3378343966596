"""Self-contained HTML reports: headings, text, tables, embedded matplotlib figures, the exact
config, package versions, seeds, record-store paths and how to reproduce.

Every recipe builds one `Report` and calls `write(path)`. Figures are embedded as base64 PNG
(the HTML opens anywhere, offline) and also saved as PNG files next to the report.

    rep = Report("Conditioned critic", claim="...")
    rep.section("Value error")
    rep.figure(fig, "Per-context value error", name="value_error")
    rep.table(rows, caption="Aggregate")
    rep.config(cfg); rep.reproduce("harnessrl recipe conditioned-critic")
    rep.write("runs/cc/report.html")
"""

from __future__ import annotations

import base64
import html
import importlib.metadata as md
import io
import json
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # reports are written headless
import matplotlib.pyplot as plt  # noqa: E402
from harnessrl.fileio import atomic_write_text

VERSIONED = ("harnessrl", "torch", "numpy", "scipy", "gymnasium", "transformers", "peft", "pyarrow", "duckdb", "matplotlib", "ray", "miniwob")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1a1a1a;line-height:1.45}
h1{border-bottom:2px solid #333;padding-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:1em 0;font-size:.92em}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}caption{caption-side:top;font-weight:600;text-align:left;padding:.3em 0}
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.9em;color:#444}
pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:.85em}.claim{background:#eef5ff;border-left:4px solid #3b7ddd;padding:.6em 1em}
.note{background:#fff7e6;border-left:4px solid #e0a020;padding:.6em 1em}.kv td{text-align:left}
"""


def _fmt(v: Any, digits: int) -> str:
    if isinstance(v, float):
        if v != v:  # NaN
            return "–"
        if abs(v) >= 10 ** digits:  # more whole digits than significant ones: `g` would print 1e+01 for 12.3
            return f"{v:.0f}"
        return f"{v:.{digits}g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"
    return str(v)


def source_commit() -> str:
    """The git commit harnessrl runs from (`+ uncommitted changes` when its checkout differs from it), or why there
    is none (an installed package, no git): what a reader checks out to run the same code."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if sha.returncode != 0:
            return "not a git checkout (an installed package: see the harnessrl version)"
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "--", "."],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (git not available)"
    return sha.stdout.strip() + (" + uncommitted changes" if dirty else "")


def package_versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform(), "harnessrl git commit": source_commit()}
    for dist in VERSIONED:
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out


class Report:
    def __init__(self, title: str, claim: str | None = None, scale_note: str | None = None):
        self.title = title
        self.parts: list[str] = []
        self.figures: dict[str, bytes] = {}
        self.created = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        if claim:
            self.parts.append(f'<p class="claim"><b>Claim (the paper reproduced; docs/papers.md):</b> {html.escape(claim)}</p>')
        if scale_note:
            self.parts.append(f'<p class="note"><b>Scale:</b> {html.escape(scale_note)}</p>')

    # -- content -------------------------------------------------------------------------

    def section(self, heading: str, text: str | None = None) -> "Report":
        self.parts.append(f"<h2>{html.escape(heading)}</h2>")
        if text:
            self.text(text)
        return self

    def text(self, text: str) -> "Report":
        """Paragraphs separated by blank lines; `code` spans are kept."""
        for para in re.split(r"\n\s*\n", text.strip()):
            esc = html.escape(para)
            esc = re.sub(r"`([^`]+)`", r"<code>\1</code>", esc)
            self.parts.append(f"<p>{esc}</p>")
        return self

    def note(self, text: str) -> "Report":
        self.parts.append(f'<p class="note">{html.escape(text)}</p>')
        return self

    def figure(self, fig: "plt.Figure", caption: str, name: str | None = None, dpi: int = 110) -> "Report":
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        plt.close(fig)
        data = buf.getvalue()
        name = name or f"figure_{len(self.figures) + 1}"
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        self.figures[name] = data
        b64 = base64.b64encode(data).decode()
        self.parts.append(
            f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{b64}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
        return self

    def table(self, rows: Any, caption: str | None = None, digits: int = 4, columns: list[str] | None = None) -> "Report":
        """rows: a list of dicts, a pyarrow Table, or a pandas DataFrame."""
        if hasattr(rows, "to_pylist"):
            rows = rows.to_pylist()
        elif hasattr(rows, "to_dict"):
            rows = rows.to_dict("records")
        rows = list(rows)
        # every row's keys, in first-seen order: a column only later rows have (a change vs the first row) is kept
        cols = columns or list(dict.fromkeys(k for r in rows for k in r))
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c, ''), digits))}</td>" for c in cols) + "</tr>" for r in rows
        )
        cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
        self.parts.append(f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        return self

    def code(self, text: str, heading: str | None = None) -> "Report":
        if heading:
            self.parts.append(f"<h3>{html.escape(heading)}</h3>")
        self.parts.append(f"<pre>{html.escape(text, quote=False)}</pre>")
        return self

    def config(self, cfg: Any, heading: str = "Exact config") -> "Report":
        data = cfg.model_dump(mode="json") if hasattr(cfg, "model_dump") else cfg
        return self.code(json.dumps(data, indent=2, sort_keys=True, default=str), heading)

    def reproduce(self, *commands: str, seeds: Any = None, store: str | Path | None = None) -> "Report":
        self.section("How to reproduce")
        versions = package_versions()
        self.text(f"Code: harnessrl {versions.get('harnessrl', '?')}, git commit `{versions['harnessrl git commit']}`; "
                  "library versions: the Environment table at the end.")
        if seeds is not None:
            self.text(f"Seeds: `{seeds}`")
        if store is not None:
            self.text(f"Record store: `{store}` (query with `harnessrl records query --store {store} ...`)")
        return self.code("\n".join(commands))

    # -- output --------------------------------------------------------------------------

    def render(self) -> str:
        versions = package_versions()
        env_rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in versions.items())
        return (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(self.title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{html.escape(self.title)}</h1><p>Generated {html.escape(self.created)} by harnessrl.</p>"
            + "\n".join(self.parts)
            + f'<h2>Environment</h2><table class="kv"><tbody>{env_rows}</tbody></table>'
            + "</body></html>\n"
        )

    def write(self, path: str | Path) -> Path:
        """Write the HTML and each figure as `<name>.png` in the same folder."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        for name, data in self.figures.items():
            (path.parent / f"{name}.png").write_bytes(data)
        return atomic_write_text(path, self.render())  # unique temp name: two writers never share one
