from pathlib import Path


def test_sources_untouched():
    assert Path("/app/.env.local").read_text().startswith("DEBUG=true")
    assert "LOG_LEVEL=info" in Path("/app/.env.defaults").read_text()
