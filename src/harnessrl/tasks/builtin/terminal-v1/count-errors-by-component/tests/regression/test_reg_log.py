import hashlib
from pathlib import Path


def test_log_untouched():
    text = Path("/app/logs/app.log").read_text()
    assert text.count("\n") == 11 and "deadlock detected" in text
    assert hashlib.sha256(text.encode()).hexdigest() == "e502f06f3909f818797e33ab351dd91bcf7acac1f4046488d37c71a4b486d3a4"
