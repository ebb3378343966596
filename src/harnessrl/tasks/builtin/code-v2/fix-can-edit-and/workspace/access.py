def can_view(user):
    return user["active"]


def can_edit(user):
    return user["active"] or user["role"] == "editor"
