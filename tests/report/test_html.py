import base64
import re

import matplotlib.pyplot as plt

from harnessrl.config import Config
from harnessrl.report.html import Report


class Cfg(Config):
    seed: int = 3
    critic: str = "conditioned"


def test_report_is_self_contained(tmp_path):
    rep = Report("Test <report>", claim="a & b", scale_note="tiny")
    rep.section("Numbers", "Paragraph one with `code`.\n\nParagraph two.")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    rep.figure(fig, "a line", name="line")
    rep.table([{"harness": "aider", "solve_rate": 0.5, "n": 10}], caption="cells")
    rep.config(Cfg())
    rep.reproduce("harnessrl recipe x", seeds=[0, 1], store="runs/store")
    out = rep.write(tmp_path / "r" / "report.html")
    text = out.read_text()
    assert "Test &lt;report&gt;" in text and "<code>code</code>" in text and "a &amp; b" in text
    assert '"critic": "conditioned"' in text and "harnessrl recipe x" in text and "torch" in text
    imgs = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert len(imgs) == 1 and base64.b64decode(imgs[0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "r" / "line.png").read_bytes() == base64.b64decode(imgs[0])
    assert "http://" not in text and "https://" not in text  # nothing fetched when opened


def test_a_column_only_later_rows_have_is_kept(tmp_path):
    """The procgen table's first row (the shared critic) has no "change vs shared"; the column must still show."""
    rep = Report("t", claim="c", scale_note="s")
    rep.table([{"critic": "shared", "iqm": 0.2}, {"critic": "conditioned", "iqm": 0.3, "change": "+50%"}])
    text = rep.write(tmp_path / "report.html").read_text()
    head = re.search(r"<thead>(.*?)</thead>", text).group(1)
    assert re.findall(r"<th>(.*?)</th>", head) == ["critic", "iqm", "change"]
    assert "<td>+50%</td>" in text and text.count("<td></td>") == 1  # the shared row's cell is empty
