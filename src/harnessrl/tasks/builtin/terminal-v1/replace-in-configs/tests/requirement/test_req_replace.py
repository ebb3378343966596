from pathlib import Path


def test_replaced():
    assert Path("/app/etc/main.conf").read_text() == (
        "url = https://new.example.com/api\nmirror = https://new.example.com\nother = http://old.example.org\n")
    assert Path("/app/etc/site/nested/proxy.conf").read_text() == "upstream https://new.example.com:8080;\n"
