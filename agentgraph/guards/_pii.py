"""Personal data masking: email addresses, phone numbers and payment card numbers.

Tuned to mask what is personal and leave what merely looks numeric: a card
number must pass the Luhn check and start like a card (an issuer's prefix), a
phone number needs a leading `+` or the separators of a written number, and
dates, times, version strings, IP addresses and order numbers stay as they are.
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
# 13-19 digits, in groups separated by single spaces or dashes (as cards are written).
_CARD = re.compile(r"(?<![\w.\-/])\d(?:[ -]?\d){12,18}(?![\w/]|[.\-]\d)")
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


def _is_card(text: str) -> bool:
    digits = re.sub(r"[ -]", "", text)
    groups = re.split(r"[ -]", text)
    # Written cards group by 4 (or 4-6-5 for Amex); a phone or an id groups otherwise.
    if len(groups) > 1 and not all(3 <= len(g) <= 6 for g in groups):
        return False
    return 13 <= len(digits) <= 19 and bool(_CARD_PREFIX.match(digits)) and luhn_valid(digits)


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
            text = _CARD.sub(sub("card", _is_card), text)
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
