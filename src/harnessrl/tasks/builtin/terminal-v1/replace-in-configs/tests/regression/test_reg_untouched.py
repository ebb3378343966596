from pathlib import Path


def test_backups_untouched():
    assert Path("/app/etc/main.conf.bak").read_text() == "url = http://old.example.com/api\n"
    assert Path("/app/etc/site/readme.txt").read_text() == "plain\n"
