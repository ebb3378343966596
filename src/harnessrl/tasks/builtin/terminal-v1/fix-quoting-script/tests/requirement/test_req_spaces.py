import subprocess


def test_spaces():
    out = subprocess.run(["/app/count_lines.sh", "/app/docs"], capture_output=True, text=True).stdout
    assert out.splitlines() == ["2 /app/docs/plain.txt", "1 /app/docs/sub dir/ok.txt",
                                "3 /app/docs/sub dir/with space.txt", "total 6"]
