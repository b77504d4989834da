"""Personal data masking: email addresses, phone numbers and payment card numbers.

Tuned to mask what is personal and leave what merely looks numeric: a card
number must pass the Luhn check and start like a card (an issuer's prefix), a
phone number needs a leading `+` or the separators of a written number, and
dates, times, version strings, IP addresses, order numbers and barcodes
(EAN-13, GTIN-14) stay as they are.

A card is found by its digits whatever is around it: in a run of numbers
written with spaces or dashes (`4111 1111 1111 1111 123`, a card then its
CVV), the groups that make a card are masked and the others are left.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from ._text import TextGuard

__all__ = ("MaskPII", "luhn_valid")

_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,24}\b"
)
# A run of numbers separated by single spaces or dashes, in which a card may lead
# (a slash ends a run, so `card/card` is two runs).
# A run may not follow the start of an IBAN (a word of two capitals and two digits,
# then a separator): `DE89 3704 ...` is an IBAN's body, not a card after a code.
# Any other word ending in a digit (`user42 4111...`) leaves the run a card.
_NUMBERS = re.compile(r"(?<![\w.\-])(?<!\b[A-Z]{2}\d\d[ -])\d+(?:[ -]\d+)*(?!\w|[.\-]\d)")
_GROUP = re.compile(r"\d+")
# A number written as a phone number: an international `+` form, or (area) local
# forms with separators; never a bare run of digits, a date or a dotted version.
_PHONE = re.compile(
    r"""
    (?<![\w.+/-])
    (?:
        \+\d{1,3}(?:[ .\-]?\(?\d{1,4}\)?){2,5}        # +1 415 555 0100, +44 (20) 7946 0958
      | \(\d{3}\)\s?\d{3}[ .\-]\d{4}                   # (415) 555-0100
      | \d{3}[ .\-]\d{3}[ .\-]\d{4}                    # 415-555-0100, 415.555.0100
    )
    (?![\w/]|[.\-]\d)
    """,
    re.VERBOSE,
)
# Issuer prefixes of the common card networks (Visa, Mastercard, Amex, Discover,
# JCB, Diners, UnionPay, Maestro, Mir).
_CARD_PREFIX = re.compile(
    r"^(?:4|5[1-5]|2[2-7]|3[47]|6011|65|64[4-9]|35|30|36|38|62|50|5[6-9]|6|220)"
)


def luhn_valid(digits: str) -> bool:
    """True when `digits` (digits only) pass the Luhn checksum of card numbers."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        n = ord(char) - 48
        if i % 2:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return total % 10 == 0


def _gs1_valid(digits: str) -> bool:
    """True when `digits` end with a GS1 check digit (EAN-13, GTIN-14: weights 1, 3)."""
    total = sum((ord(c) - 48) * (3 if i % 2 else 1) for i, c in enumerate(reversed(digits)))
    return total % 10 == 0


def _is_card(digits: str, grouped: bool) -> bool:
    if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(digits) or not luhn_valid(digits):
        return False
    # Visa is the only network with 13 digits; a contiguous 13- or 14-digit number
    # with a GS1 check digit is a product's barcode, printed without separators.
    if len(digits) == 13 and digits[0] != "4":
        return False
    return grouped or len(digits) not in (13, 14) or not _gs1_valid(digits)


_MOST_GROUPS = 6
"""The most groups a written card takes: 4 digits, then groups of 3 or more, 19 in all."""

Group = tuple[int, int, str]
"""A group of digits in a run of numbers: where it starts and ends, and its digits."""


def _card_at(groups: list[Group], i: int) -> tuple[int, int]:
    """Where a card starting at group `i` ends and how many groups it takes; (0, 0) if none.

    A card is one group of 13-19 digits, or groups as cards are written: a
    first group of four, then groups of three to six (4-4-4-4, 4-6-5,
    4-4-4-4-3). The most groups that make one win; what follows stays.
    """
    _, stop, first = groups[i]
    if len(first) != 4:
        return (stop, 1) if _is_card(first, False) else (0, 0)
    digits, found = first, (0, 0)
    # 19 digits at most, in groups of three or more after the first four: six groups.
    for taken, (_, stop, group) in enumerate(groups[i + 1 : i + _MOST_GROUPS], 2):
        if not 3 <= len(group) <= 6 or len(digits) >= 19:
            break
        digits += group
        if _is_card(digits, True):
            found = (stop, taken)
    return found


def _cards(run: str) -> list[tuple[int, int]]:
    """The spans of the cards in `run` (numbers separated by spaces or dashes)."""
    groups = [(m.start(), m.end(), m.group()) for m in _GROUP.finditer(run)]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(groups):
        end, taken = _card_at(groups, i)
        if taken:
            spans.append((groups[i][0], end))
        i += taken or 1
    return spans


def _is_phone(text: str) -> bool:
    digits = sum(c.isdigit() for c in text)
    return 8 <= digits <= 15 if text.startswith("+") else digits == 10


@attrs.frozen
class MaskPII(TextGuard):
    """Masks email addresses, phone numbers and payment card numbers in text.

    Each kind can be turned off; masks are `[email]`, `[phone]` and `[card]`.
    A rewrite's detail counts what was masked, by kind (never the values).
    """

    emails: bool = True
    phones: bool = True
    cards: bool = True
    label: str = attrs.field(default="mask_pii", kw_only=True)

    @property
    def name(self) -> str:
        return self.label

    def mask(self, text: str) -> str:
        return self._masked(text)[0]

    def _masked(self, text: str) -> tuple[str, dict[str, int]]:
        counts = {"email": 0, "phone": 0, "card": 0}

        def sub(kind: str, check: Any) -> Any:
            def replace(match: re.Match[str]) -> str:
                if check is not None and not check(match.group(0)):
                    return match.group(0)
                counts[kind] += 1
                return f"[{kind}]"

            return replace

        if self.emails and "@" in text:
            text = _EMAIL.sub(sub("email", None), text)
        if self.cards:

            def card(match: re.Match[str]) -> str:
                run = match.group(0)
                spans = _cards(run)
                if not spans:
                    return run
                counts["card"] += len(spans)
                parts, at = [], 0
                for start, end in spans:
                    parts += [run[at:start], "[card]"]
                    at = end
                return "".join(parts) + run[at:]

            text = _NUMBERS.sub(card, text)
        if self.phones:
            text = _PHONE.sub(sub("phone", _is_phone), text)
        return text, counts

    def findings(self, before: Any, after: Any) -> dict[str, Any]:
        from ._text import map_text

        found = {"email": 0, "phone": 0, "card": 0}

        def count(text: str) -> str:
            for kind, n in self._masked(text)[1].items():
                found[kind] += n
            return text

        map_text(before, count)
        return {"masked": {k: v for k, v in found.items() if v}}
