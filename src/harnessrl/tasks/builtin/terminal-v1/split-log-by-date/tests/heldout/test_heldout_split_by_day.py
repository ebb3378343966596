import subprocess


def split(log, folder):
    r = subprocess.run(["/app/split_by_day", str(log), str(folder)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return {p.name: p.read_text() for p in folder.iterdir()}


def test_another_log_into_a_new_nested_folder(tmp_path):
    log = tmp_path / "api.log"
    log.write_text("2024-01-31T23:59:59 PUT /x\n"
                   "ts=2024-02-01T00:00:00 stray prefix\n"
                   "2024-02-01T00:00:00 GET /y\n"
                   "2024-01-31T08:00:00 GET /z\n"
                   "-- restart --\n")
    assert split(log, tmp_path / "out" / "days") == {
        "2024-01-31.log": "2024-01-31T23:59:59 PUT /x\n2024-01-31T08:00:00 GET /z\n",
        "2024-02-01.log": "2024-02-01T00:00:00 GET /y\n",
        "unknown.log": "ts=2024-02-01T00:00:00 stray prefix\n-- restart --\n",
    }


def test_every_line_dated_and_a_second_run(tmp_path):
    log = tmp_path / "clean.log"
    log.write_text("2023-12-31T10:00:00 a\n2023-12-31T11:00:00 b\n")
    expected = {"2023-12-31.log": "2023-12-31T10:00:00 a\n2023-12-31T11:00:00 b\n"}
    assert split(log, tmp_path / "d") == expected  # no unknown.log without undated lines
    assert split(log, tmp_path / "d") == expected  # replaced, not appended
