import os
import subprocess


def test_plain_names(tmp_path):
    (tmp_path / "one.txt").write_text("1\n2\n")
    (tmp_path / "two.txt").write_text("3\n")
    out = subprocess.run(["/app/count_lines.sh", str(tmp_path)], capture_output=True, text=True).stdout
    assert out.splitlines() == [f"2 {tmp_path}/one.txt", f"1 {tmp_path}/two.txt", "total 3"]
    assert os.access("/app/count_lines.sh", os.X_OK)
