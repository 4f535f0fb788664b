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

from guardrails.anchors import Text, Window, around, literal_hits, search

Match = tuple[str, int, int]

_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,24}\b")
# Each alternative starts with what it consumes and looks behind after it (`\d(?<!\w\d)` for
# `\b\d`): the regex engine then rejects most positions on their first character, three times
# faster than a lookbehind tried at every position.
_PHONE = (
    r"\+(?<![\w+]\+)\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}(?![\w-])"
    r"|\((?<![\w(]\()\d{3}\) ?\d{3}[ .-]\d{4}\b"
    r"|\d(?<!\w\d)\d\d[.-]\d{3}[.-]\d{4}\b"
)
_CARD = r"\d(?<![\d.-]\d)(?:[ -]?\d){12,18}(?![\d.-])"
_IBAN = r"[A-Z](?<!\w[A-Z])[A-Z]\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"
_NUMBERS = re.compile(f"(?P<iban>{_IBAN})|(?P<card>{_CARD})|(?P<phone>{_PHONE})")
# Where a number may be (``_SHAPES`` in a mask of the text: digits, small letters, the rest):
# eight digits in a row after anything but a small letter (hex ids' runs of digits follow one),
# or two groups of three digits or more across one character. Every card number, IBAN and North
# American number this module finds has one; other phone numbers start with `+`. A year, a
# date, a time, a price or a hex id has none: they are the bulk of digits in tool results.
_DIGIT_MASK = bytes(
    ord("d") if chr(i) in string.digits else ord("a") if chr(i) in string.ascii_lowercase else 32
    for i in range(256)
)
_SHAPES = (b" dddddddd", b"ddd ddd")
# The longest number found is an IBAN of 34 characters in groups (43): a window around a shape
# holds any number the shape is part of.
_BEFORE, _AFTER = 48, 56
# Issuer prefixes (IIN ranges) of the common card networks: Visa, Mastercard, Amex, Discover,
# Diners, JCB, UnionPay, Maestro.
_ISSUER = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[068]|35|6(?:011|5|4[4-9]|2)|5[06-8]")


def find_personal_data(text: str) -> Iterator[Match]:
    return personal_data_in(Text(text))


def personal_data_in(text: Text) -> Iterator[Match]:
    size = len(text.raw)
    for match in search(_EMAIL, text.text, around(literal_hits(text.raw, (b"@",)), 64, 128, size)):
        yield "email", match.start(), match.end()
    mask = text.raw.translate(_DIGIT_MASK)
    hits = [*literal_hits(mask, _SHAPES), *literal_hits(text.raw, (b"+",))]
    if mask.startswith(b"dddddddd"):
        hits.append(0)
    windows = around(hits, _BEFORE, _AFTER, size)
    for match in search(_NUMBERS, text.text, (w for w in windows if _may_hold(text, mask, w))):
        kind = match.lastgroup or "number"
        if _valid(kind, match.group()):
            yield kind, match.start(), match.end()


def _may_hold(text: Text, mask: bytes, window: Window) -> bool:
    """Whether the window has what one of the patterns needs (they cost ~100 ns a character):
    13 digits for a card, a capital for an IBAN, `+` for a phone number, or 10 digits with a
    bracket, a dash or a dot for a North American number."""
    start, end = window
    digits = mask.count(b"d", start, end)
    if digits >= 13:
        return True
    part = text.raw[start:end]
    if b"+" in part or part.lower() != part:
        return True
    return digits >= 10 and (b"(" in part or b"-" in part or b"." in part)


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
