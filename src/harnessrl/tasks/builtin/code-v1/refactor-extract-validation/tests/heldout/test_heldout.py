from accounts import password_problems, validate_email


def test_other_emails():
    assert validate_email("first.last@example.co.uk")
    for bad in ("no-at-sign", "x@y", "x@y.", "@@"):
        assert not validate_email(bad), bad


def test_other_passwords():
    assert password_problems("a1") == ["too short"]
    assert password_problems("!!!!!!!!") == ["no digit", "no letter"]
    assert password_problems("zz99zz99") == []
