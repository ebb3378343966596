def add_tag(tag, tags=[]):
    tag = tag.strip().lower()
    if tag and tag not in tags:
        tags.append(tag)
    return tags


def format_tags(tags):
    return " ".join("#" + t for t in sorted(tags))
