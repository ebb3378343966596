from text_utils import slugify


def test_runs_and_ends():
    assert slugify("  Hello -- World! ") == "hello-world"


def test_apostrophe_and_digits():
    assert slugify("C'est la vie") == "c-est-la-vie"
    assert slugify("Top 10 (2024)") == "top-10-2024"
