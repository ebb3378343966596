import json
from pathlib import Path


def test_json_untouched():
    assert len(json.loads(Path("/app/users.json").read_text())) == 4
