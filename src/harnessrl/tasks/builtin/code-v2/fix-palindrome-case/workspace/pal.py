def is_palindrome(s):
    return s == s[::-1]


def longest_word(words):
    return max(words, key=len)
