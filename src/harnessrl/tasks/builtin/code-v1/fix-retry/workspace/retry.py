def retry(fn, attempts=3, exceptions=(Exception,)):
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    for _ in range(attempts + 1):
        try:
            return fn()
        except exceptions:
            continue
    return None
