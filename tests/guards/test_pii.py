"""The PII masker: what it masks, and the look-alikes it must leave alone."""

from __future__ import annotations

import pytest

from agentgraph.guards import MaskPII, luhn_valid

MASK = MaskPII()


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("write to jane.doe+news@mail.example.co.uk today", "write to [email] today"),
        ("call +1 415 555 0100 now", "call [phone] now"),
        ("call +44 (20) 7946 0958", "call [phone]"),
        ("office: (415) 555-0100.", "office: [phone]."),
        ("cell 415-555-0100, home 415.555.0199", "cell [phone], home [phone]"),
        ("card 4111 1111 1111 1111 exp 12/29", "card [card] exp 12/29"),
        ("amex 3782-822463-10005", "amex [card]"),
        ("pay with 5555555555554444", "pay with [card]"),
    ],
)
def test_personal_data_is_masked(text: str, masked: str) -> None:
    assert MASK.mask(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "order 1234567890123456 shipped",  # 16 digits that fail the Luhn check
        "order #4111111111111112",  # a card's prefix, but not its checksum
        "order 9000000000000008",  # passes Luhn, but no card network starts with 9
        "invoice 2024-01-15, due 15.02.2024 at 12:30",
        "upgrade from 1.2.3 to 10.0.19041.1234",
        "served from 192.168.100.200:8080",
        "ticket 4155550100",  # a bare run of digits is an id, not a phone
        "tracking 1Z999AA10123456784",
        "ISBN 978-3-16-148410-0, batch 2023-0001-77",
        "sha 4111111111111111abc",
        "user@localhost is not an address with a domain",
    ],
)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert MASK.mask(text) == text


def test_each_kind_can_be_turned_off() -> None:
    text = "a@b.example, +1 415 555 0100, 4111 1111 1111 1111"
    assert MaskPII(emails=False).mask(text) == "a@b.example, [phone], [card]"
    assert MaskPII(phones=False).mask(text) == "[email], +1 415 555 0100, [card]"
    assert MaskPII(cards=False).mask(text) == "[email], [phone], 4111 1111 1111 1111"


def test_the_luhn_check() -> None:
    assert luhn_valid("4111111111111111") and luhn_valid("79927398713")
    assert not luhn_valid("4111111111111112") and not luhn_valid("79927398710")


async def test_a_rewrite_counts_what_it_masked_never_the_values() -> None:
    decision = await MASK.check("output", "mail a@b.example or c@d.example, 4111111111111111")
    assert decision.action == "rewrite"
    assert decision.value == "mail [email] or [email], [card]"
    assert decision.detail == {"masked": {"email": 2, "card": 1}}


pytestmark = pytest.mark.anyio
