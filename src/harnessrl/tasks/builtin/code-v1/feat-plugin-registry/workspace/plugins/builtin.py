from plugins.registry import register


def reverse(text):
    return text[::-1]


register("reverse", reverse)
