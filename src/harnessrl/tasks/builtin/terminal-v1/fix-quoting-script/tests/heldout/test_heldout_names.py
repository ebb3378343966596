import subprocess


def test_other_awkward_names(tmp_path):
    (tmp_path / "dir one").mkdir()
    (tmp_path / "a  b.txt").write_text("1\n")
    (tmp_path / "dir one" / "c d.txt").write_text("1\n2\n")
    (tmp_path / "dir one" / "x*y.txt").write_text("1\n2\n3\n4\n")
    (tmp_path / "plain.txt").write_text("")
    (tmp_path / "skip me.md").write_text("1\n")
    out = subprocess.run(["/app/count_lines.sh", str(tmp_path)], capture_output=True, text=True).stdout
    assert out.splitlines() == [f"1 {tmp_path}/a  b.txt", f"2 {tmp_path}/dir one/c d.txt",
                                f"4 {tmp_path}/dir one/x*y.txt", f"0 {tmp_path}/plain.txt", "total 7"]
