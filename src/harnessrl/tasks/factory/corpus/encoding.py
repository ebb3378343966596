"""Simple encodings and ciphers."""

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def caesar(text, shift):
    """Shift each letter `shift` places along the alphabet (wrapping, case kept); other characters unchanged."""
    out = []
    for ch in text:
        if ch.lower() in ALPHABET:
            i = (ALPHABET.index(ch.lower()) + shift) % 26
            out.append(ALPHABET[i].upper() if ch.isupper() else ALPHABET[i])
        else:
            out.append(ch)
    return "".join(out)


def rle_encode(text):
    """Run-length encoding: "aaab" -> "3a1b"."""
    if not text:
        return ""
    out = []
    run_char, run_len = text[0], 1
    for ch in text[1:]:
        if ch == run_char:
            run_len += 1
        else:
            out.append(f"{run_len}{run_char}")
            run_char, run_len = ch, 1
    out.append(f"{run_len}{run_char}")
    return "".join(out)


def rle_decode(text):
    """The inverse of rle_encode: "3a1b" -> "aaab" (counts may have several digits)."""
    out, number = [], ""
    for ch in text:
        if ch.isdigit():
            number += ch
        else:
            out.append(ch * int(number))
            number = ""
    return "".join(out)


def to_hex(data):
    """Bytes as lower-case hex, two digits per byte."""
    return "".join(f"{b:02x}" for b in data)


def from_hex(text):
    """The bytes of a hex string (even length, any case)."""
    if len(text) % 2 != 0:
        raise ValueError("odd length")
    return bytes(int(text[i:i + 2], 16) for i in range(0, len(text), 2))


def atbash(text):
    """Mirror each lower-case letter (a <-> z, b <-> y, ...); other characters unchanged."""
    return "".join(ALPHABET[25 - ALPHABET.index(ch)] if ch in ALPHABET else ch for ch in text)


def vowel_mask(text, mask="*"):
    """Every vowel (either case) replaced by `mask`."""
    return "".join(mask if ch.lower() in "aeiou" else ch for ch in text)


def checksum(data):
    """The sum of the byte values modulo 256."""
    return sum(data) % 256


def binary_string(n, width):
    """`n` >= 0 in binary, left-padded with zeros to at least `width` digits."""
    bits = ""
    while n > 0:
        bits = str(n % 2) + bits
        n //= 2
    return bits.rjust(width, "0")


def xor_bytes(a, b):
    """Bytewise XOR of two byte strings, as long as the shorter one."""
    return bytes(x ^ y for x, y in zip(a, b))
