USERS = {}


def register(email, password):
    if email.count("@") != 1:
        raise ValueError("invalid email")
    local, domain = email.split("@")
    if not local or "." not in domain or domain.startswith(".") or domain.endswith("."):
        raise ValueError("invalid email")
    problems = []
    if len(password) < 8:
        problems.append("too short")
    if not any(c.isdigit() for c in password):
        problems.append("no digit")
    if not any(c.isalpha() for c in password):
        problems.append("no letter")
    if problems:
        raise ValueError("weak password: " + ", ".join(problems))
    if email in USERS:
        raise ValueError("already registered")
    USERS[email] = password
    return email
