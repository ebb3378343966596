def extension(name):
    if "." not in name:
        return ""
    return name.split(".")[1]


def stem(name):
    return name.rsplit(".", 1)[0]
