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


# Networks' published test numbers, each written as people write them.
CARDS = [
    "4111111111111111",  # Visa
    "4111 1111 1111 1111",
    "4111-1111-1111-1111",
    "4012 8888 8888 1881",
    "4222222222222",  # Visa, 13 digits
    "4917 6100 0000 0000 003",  # Visa, 19 digits
    "5555 5555 5555 4444",  # Mastercard
    "5105-1051-0510-5100",
    "2223 0031 2200 3222",  # Mastercard, 2-series
    "5200828282828210",  # a Mastercard number that also has a GS1 check digit
    "3782 822463 10005",  # Amex, 4-6-5
    "371449635398431",
    "378734493671000",
    "6011 1111 1111 1117",  # Discover
    "6445644564456445",
    "3056 930902 5904",  # Diners, 4-6-4
    "38520000023237",
    "3530 1113 3330 0000",  # JCB
    "3566002020360505",
    "6200 0000 0000 0005",  # UnionPay
    "6759 6498 2643 8453",  # Maestro
    "6799 9901 0000 0000 019",
    "2200 0000 0000 0004",  # Mir
]


@pytest.mark.parametrize("card", CARDS)
@pytest.mark.parametrize(
    ("template", "masked"),
    [
        ("{}", "[card]"),
        ("pay with {} today", "pay with [card] today"),
        ("card: {}.", "card: [card]."),
        ("({})", "([card])"),
    ],
)
def test_every_written_card_form_is_masked(card: str, template: str, masked: str) -> None:
    assert MASK.mask(template.format(card)) == masked


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("4111 1111 1111 1111 123", "[card] 123"),  # the card, then its CVV
        ("5500 0055 5555 5559 20 EUR", "[card] 20 EUR"),
        ("4111111111111111/5500005555555559", "[card]/[card]"),
        ("3782 822463 10005 4 times", "[card] 4 times"),
        ("4111111111111111 123", "[card] 123"),
        ("4111-1111-1111-1111-07-29", "[card]-07-29"),  # then its expiry
        ("cards 4111 1111 1111 1111 5555 5555 5555 4444", "cards [card] [card]"),
        ("6011 1111 1111 1117 321 exp 12/29", "[card] 321 exp 12/29"),
        ("3056 930902 5904 12", "[card] 12"),
        ("ref #4111111111111111-2", "ref #[card]-2"),
        ("4111 1111 1111 1111 123 5500 0055 5555 5559 456", "[card] 123 [card] 456"),
        ("qty 12 4111 1111 1111 1111", "qty 12 [card]"),  # or whatever comes before
        ("exp 12/29 4111 1111 1111 1111", "exp 12/29 [card]"),
        ("4111111111111111 and 4012888888881881", "[card] and [card]"),
        # A word ending in a digit before it: only an IBAN's start (`DE89 `) keeps its body.
        ("user42 4111111111111111", "user42 [card]"),
        ("ticket T5 4111 1111 1111 1111", "ticket T5 [card]"),
        ("room 4B2 4111-1111-1111-1111 ok", "room 4B2 [card] ok"),
        ("Flight BA2490 5555 5555 5555 4444", "Flight BA2490 [card]"),
    ],
)
def test_a_card_is_masked_whatever_follows_it(text: str, masked: str) -> None:
    assert MASK.mask(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "5901234123457",  # EAN-13 (passes Luhn too)
        "barcode 4006381333931",  # EAN-13 with a German prefix
        "EAN 9780306406157",  # ISBN-13 as a barcode
        "GTIN 10012345678902",  # GTIN-14
        "GTIN 30123450001098",  # GTIN-14 with a Diners prefix, Luhn-valid too
        "4111111111111111123",  # 19 contiguous digits that fail the Luhn check
        "4111 1111 1111 1112",  # the checksum is wrong
        "4111 1111 1111",  # too few digits
        "1234 5678 9012 3452",  # Luhn-valid, no card network starts with 1
        "0000 0000 0000 0000",
        "9000 0000 0000 0008",
        "41 11 11 11 11 11 11 11",  # pairs are not how cards are written
        "4111 11 11 11 11 11 11",
        "411 1111 1111 1111",  # a first group of three
        "IBAN DE12 4000 0566 5566 5556 78",  # a Luhn-valid Visa-like body, in an IBAN
        "4111 1111 1111 1111.50",  # an amount with decimals
        "1700000000000",  # a timestamp in milliseconds
        "20240115123045123",  # a packed date and time
        "1234567890123456789012",  # a long id
        "account 000123456789",
        "**** **** **** 1111",
        "4111 XXXX XXXX 1111",
        "v4111111111111111",
        "4111111111111111x",
        "3.1415926535897932",
        "-4111111111111111",
        "IBAN DE89 3704 0044 0532 0130 00",
        "SSN 123-45-6789",
        "2024-01-15 10:30:00",
        "5901234123457 5901234123457",  # two barcodes
    ],
)
def test_card_look_alikes_are_left_alone(text: str) -> None:
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


class _Touched(list):
    """Groups that count how many of them a card search reads."""

    read = 0

    def __getitem__(self, index):
        found = super().__getitem__(index)
        _Touched.read += len(found) if isinstance(index, slice) else 1
        return found


def test_a_card_search_reads_the_groups_a_card_can_take_not_the_whole_run() -> None:
    # A long table of numbers is read once: each start looks at most at the six groups
    # a card of 19 digits can span, not at every group after it.
    from agentgraph.guards._pii import _card_at

    written = ["4111", "1111", "1111", "1111", *["1234"] * 1000]
    groups = _Touched((5 * i, 5 * i + 4, g) for i, g in enumerate(written))
    _Touched.read = 0
    assert _card_at(groups, 0) == (19, 4)  # 4111 1111 1111 1111
    assert _Touched.read <= 6
