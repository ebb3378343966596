RATES = {"EU": 0.20, "US": 0.07, "UK": 0.20}
DEFAULT = 0.10


def rate_for(region):
    return DEFAULT
