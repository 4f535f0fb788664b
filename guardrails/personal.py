"""Personal data in text: email addresses, phone numbers, payment card numbers (Luhn-checked, of
a known issuer's prefix) and IBANs (mod-97 checked).

A documented pattern set rather than Presidio: Presidio's analyzer loads a spaCy language model
(hundreds of MB, milliseconds per call), beyond this hot path's budget. The patterns favour
precision: a phone number needs a ``+`` country code or a North American layout.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator

from guardrails.anchors import around, ascii_mask, literal_hits, search

Match = tuple[str, int, int]

_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,24}\b")
_PHONE = (
    r"(?<![\w+])\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}(?![\w-])"
    r"|(?<![\w(])\(\d{3}\) ?\d{3}[ .-]\d{4}\b"
    r"|\b\d{3}[.-]\d{3}[.-]\d{4}\b"
)
_CARD = r"(?<![\d.-])(?:\d[ -]?){12,18}\d(?![\d.-])"
_IBAN = r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"
_NUMBERS = re.compile(f"(?P<iban>{_IBAN})|(?P<card>{_CARD})|(?P<phone>{_PHONE})")
# Every card number, IBAN and North American number has four digits in a row; other phone
# numbers start with `+`.
# Digits, letters and the separators inside numbers, each as one byte (`ascii_mask`).
_DIGIT_MASK = bytes(
    ord("d")
    if chr(i) in string.digits
    else ord("a")
    if chr(i) in string.ascii_letters
    else ord("s")
    if chr(i) in " -."
    else 32
    for i in range(256)
)
# Issuer prefixes (IIN ranges) of the common card networks: Visa, Mastercard, Amex, Discover,
# Diners, JCB, UnionPay, Maestro.
_ISSUER = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[068]|35|6(?:011|5|4[4-9]|2)|5[06-8]")


def find_personal_data(text: str) -> Iterator[Match]:
    size = len(text)
    for match in search(_EMAIL, text, around(literal_hits(text, "@"), 64, 128, size)):
        yield "email", match.start(), match.end()
    hits = [*_grouped_digits(text, ascii_mask(text, _DIGIT_MASK)), *literal_hits(text, "+")]
    for match in search(_NUMBERS, text, around(hits, 26, 40, size)):
        kind = match.lastgroup or "number"
        if _valid(kind, match.group()):
            yield kind, match.start(), match.end()


def _grouped_digits(text: str, mask: bytes) -> Iterator[int]:
    """Groups of four digits or more that may be part of a card number, an IBAN or a North
    American phone number: standing on their own (after a space, a separator or punctuation),
    with ten digits or more nearby, and eight in a row or beside another group of three or more
    across one separator; or eight digits or more right after a letter (an unspaced IBAN). A
    year, a date, a time, a hex id or a number in prose is none of these: they are the bulk of
    digits in tool results, and a hex id's digits never stand on their own."""
    size = len(text)
    starts = [0] if mask.startswith(b"dddd") else []
    for lead in (b" dddd", b"sdddd"):
        starts.extend(at + 1 for at in _finds(mask, lead))
    starts.extend(at + 1 for at in _finds(mask, b"adddddddd"))
    for at in starts:
        end = at + 4
        while end < size and mask[end] == _D:
            end += 1
        if mask.count(b"d", max(0, at - 16), at + 24) < _NEARBY:
            continue
        after = end + 4 <= size and text[end] in _SEPARATORS and mask[end + 1 : end + 4] == b"ddd"
        before = at >= 4 and text[at - 1] in _SEPARATORS and mask[at - 4 : at - 1] == b"ddd"
        if end - at >= 8 or after or before:
            yield at


def _finds(data: bytes, needle: bytes) -> Iterator[int]:
    at = data.find(needle)
    while at != -1:
        yield at
        at = data.find(needle, at + 1)


_D = ord("d")
_SEPARATORS = frozenset(" -.")
# The fewest digits of any number these patterns find around a four-digit group (a North
# American phone number has ten; a card 13 to 19; an IBAN's check digits and account 12 or more).
_NEARBY = 10


def _valid(kind: str, found: str) -> bool:
    if kind == "card":
        return card_number(found)
    if kind == "iban":
        return iban(found)
    return 8 <= sum(c.isdigit() for c in found) <= 15  # a phone number


def card_number(text: str) -> bool:
    digits = [int(c) for c in text if c.isdigit()]
    if not 13 <= len(digits) <= 19 or _ISSUER.match(text) is None:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        doubled = digit * 2 if index % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


def iban(text: str) -> bool:
    compact = text.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1
