import subprocess


def counts(*paths):
    r = subprocess.run(["/app/error_counts", *map(str, paths)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_two_other_logs_together(tmp_path):
    monday, tuesday = tmp_path / "mon.log", tmp_path / "tue.log"
    monday.write_text("2024-06-03 08:00:00 ERROR queue   backlog over limit\n"
                      "2024-06-03 08:01:00 INFO  web     ERROR page rendered for /missing\n"
                      "2024-06-03 08:02:00 ERROR mailer  smtp refused\n"
                      "2024-06-03 08:03:00 WARN  queue   slow consumer\n")
    tuesday.write_text("2024-06-04 09:00:00 ERROR web     upstream timeout\n"
                       "2024-06-04 09:01:00 ERROR queue   backlog over limit\n"
                       "2024-06-04 09:02:00 ERROR mailer  smtp refused\n"
                       "2024-06-04 09:03:00 ERROR queue   consumer crashed\n")
    assert counts(monday, tuesday) == ["queue 3", "mailer 2", "web 1"]


def test_a_log_without_errors(tmp_path):
    quiet = tmp_path / "quiet.log"
    quiet.write_text("2024-06-05 10:00:00 INFO  web     GET / 200\n2024-06-05 10:00:01 WARN  db      slow query\n")
    assert counts(quiet) == []
