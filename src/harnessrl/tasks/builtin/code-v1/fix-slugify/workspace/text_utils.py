import re


def slugify(title):
    slug = title.lower()
    slug = re.sub(r"[^a-z0-9]", "-", slug)
    return slug


def truncate(text, width):
    return text if len(text) <= width else text[: width - 1] + "…"
