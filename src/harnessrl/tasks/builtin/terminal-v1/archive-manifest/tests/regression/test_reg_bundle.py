import tarfile


def test_bundle_kept():
    with tarfile.open("/app/bundle.tar.gz") as t:
        assert "docs/readme.md" in t.getnames()
