from pathlib import Path


def test_env():
    assert Path("/app/.env").read_text().splitlines() == [
        "DEBUG=true", "HOST=0.0.0.0", "LOG_LEVEL=info", "PORT=9000", "SECRET=abc=def"]
