"""Numbers and amounts in every written form (issue 28 req 4), on both sides.

The number-word parser is tested from the rules of English cardinals (`numwords`' grammar):
every whole number rendered to words by those rules reads back as itself (property test), the
forms the rules allow ("and" after "hundred", "twelve hundred", "a million", "point" and digit
words) read as their value, and what the rules do not allow reads as nothing. Then amounts:
currencies before or after, scale words, cents in words or as a fraction of a hundred; and the
verifier: an amount in numerals is supported by the same amount in words on the cited page and
the other way round, a different amount is a finding that says which reading it took.
"""

import time
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.verification import checks
from apps.verification.amounts import amount_values, describe, distance, parse_amount
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex
from apps.verification.numwords import MAX_VALUE, number_values, parse_words, to_words, words_of
from tests.verification.test_index import page


def _read(text: str) -> Decimal | None:
    return parse_words(words_of(text))


# --- the grammar ------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0, max_value=MAX_VALUE - 1))
def test_every_number_rendered_in_words_reads_back_as_itself(number: int) -> None:
    words = to_words(number)

    assert _read(words) == number
    assert [v for _, _, v in number_values(f"He said {words}.")] == [number]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=99), st.integers(min_value=1, max_value=99))
def test_and_after_hundred_and_before_the_last_group_is_allowed(count: int, rest: int) -> None:
    # British usage: "one hundred and five", "two thousand and forty"
    head, tail = to_words(count), to_words(rest)
    assert _read(f"{head} hundred and {tail}") == count * 100 + rest
    assert _read(f"{head} thousand and {tail}") == count * 1000 + rest


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=11, max_value=99).filter(lambda n: n % 10))
def test_hundreds_counted_past_ten_are_read(count: int) -> None:
    # "twelve hundred", "twenty-five hundred": a count of hundreds up to ninety-nine
    assert _read(f"{to_words(count)} hundred") == count * 100


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=0, max_value=999),
    st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=6),
    st.sampled_from([("thousand", 3), ("million", 6), ("billion", 9)]),
)
def test_a_decimal_with_a_scale_is_read(whole: int, digits: list[int], scale: tuple) -> None:
    word, power = scale
    text = f"{to_words(whole)} point {' '.join(to_words(d) for d in digits)} {word}"
    expected = Decimal(f"{whole}.{''.join(map(str, digits))}").scaleb(power)

    assert _read(text) == expected


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("eighty-four thousand two hundred fifty", 84250),
        ("eighty four thousand two hundred and fifty", 84250),
        ("four point one million", 4_100_000),
        ("one hundred and five", 105),
        ("a million", 1_000_000),
        ("a hundred", 100),
        ("twelve hundred", 1200),
        ("twelve hundred thousand", 1_200_000),
        ("One Hundred Five", 105),
        ("TWENTY-ONE", 21),
        ("two point five oh", Decimal("2.50")),
        ("zero", 0),
    ],
)
def test_forms_of_english_numbers(text: str, value: Decimal) -> None:
    assert _read(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "hundred hundred",  # no count before hundred, and two hundreds
        "one hundred hundred",
        "a trillion trillion",  # scales must fall
        "million thousand",
        "thousand",  # a scale needs a count
        "two million twelve hundred thousand",  # a term as large as the scale before it
        "twenty zero",
        "zero hundred",
        "five six",
        "one point",  # point needs digit words
        "one point five million two hundred",  # the decimal's scale ends the number
        "one point twenty",  # a tens word is no digit after the point
        "nine thousand trillion",  # past the largest value
    ],
)
def test_what_the_rules_do_not_allow_is_no_number(text: str) -> None:
    assert _read(text) is None


def test_a_number_word_inside_another_word_is_no_number() -> None:
    text = "Someone often gave a tone of oneness; Tennyson was a twentysomething at Fortyville."
    assert number_values(text) == []
    # joined by hyphens to another word: an adjective, not a number
    assert number_values("a three-year term and a twenty-one-gun salute") == []


def test_two_numbers_joined_by_and_are_two_numbers() -> None:
    assert [v for _, _, v in number_values("between ten and twenty")] == [10, 20]


@pytest.mark.parametrize(
    "text",
    [
        " ".join(["one"] * 5_000),
        "hundred " * 5_000,
        ("twenty-" * 3_000) + "one",
        "a trillion " * 3_000,
        "one point " + "five " * 5_000,
    ],
)
def test_hostile_runs_of_number_words_give_nothing_quickly(text: str) -> None:
    started = time.perf_counter()

    found = number_values(text)
    amounts = amount_values(text + " dollars")

    assert time.perf_counter() - started < 1.0
    assert all(v < MAX_VALUE for _, _, v in found)
    assert amounts == [] or all(int(v) < MAX_VALUE * 100 for _, _, v in amounts)


def test_a_long_page_of_words_is_read_in_linear_time() -> None:
    page_text = "The witness said that someone paid forty dollars for it. " * 4_000

    started = time.perf_counter()
    found = amount_values(page_text)

    assert time.perf_counter() - started < 2.0
    assert len(found) == 4_000 and {v for _, _, v in found} == {"4000"}


# --- amounts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("eighty-four thousand two hundred fifty dollars", "8425000"),
        ("four point one million dollars", "410000000"),
        ("one hundred and five dollars and twenty cents", "10520"),
        ("one hundred five dollars and 20/100", "10520"),
        ("One Hundred Five and 20/100 Dollars", "10520"),
        ("a million dollars", "100000000"),
        ("twelve hundred dollars", "120000"),
        ("one dollar", "100"),
        ("twelve thousand U.S. dollars", "1200000"),
        ("$1.2 million", "120000000"),
        ("USD 1,250", "125000"),
        ("1,250 USD", "125000"),
        ("EUR 3.5m", "EUR:350000000"),
        ("3,500 EUR", "EUR:350000"),
        ("€3,500.00", "EUR:350000"),
        ("three thousand five hundred euros", "EUR:350000"),
        ("£12k", "GBP:1200000"),
        ("GBP 12,000", "GBP:1200000"),
        ("twelve thousand pounds sterling", "GBP:1200000"),
    ],
)
def test_amounts_in_every_written_form(text: str, value: str) -> None:
    assert parse_amount(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "hundred hundred dollars",
        "a trillion trillion dollars",
        "five pounds",  # a weight as often as money
        "someone dollars",
        "one hundred dollars and ninety-nine hundred cents",
    ],
)
def test_what_is_no_amount_in_words_is_not_read_as_one(text: str) -> None:
    assert amount_values(text) == []


def test_an_amount_is_described_and_compared_with_its_currency() -> None:
    assert describe("8425000") == "$84,250.00"
    assert describe("EUR:350000") == "EUR 3,500.00"
    assert distance("350000", "EUR:350000")[0] == 2  # another currency is furthest
    assert distance("350000", "530000")[0] == 0  # the same digits, transposed


# --- the verifier, both sides -----------------------------------------------------------------


def _amount_results(draft: str, source: str) -> list[checks.Finding]:
    index = PacketIndex.build([page(1, source, bates="KT000001")])
    results = checks.verify_text(draft, extract_claims(draft, bates_prefixes=["KT"]), index)
    return [r for r in results if r.claim.kind == "amount"]


@pytest.mark.parametrize(
    ("drafted", "testified"),
    [
        ("$4.1 million", "four point one million dollars"),
        ("$4,100,000", "four point one million dollars"),
        ("$84,250", "eighty-four thousand two hundred fifty dollars"),
        ("$105.20", "one hundred and five dollars and twenty cents"),
        ("$1,200", "twelve hundred dollars"),
        ("$1 million", "a million dollars"),
        ("EUR 3.5m", "three point five million euros"),
    ],
)
def test_numerals_in_the_draft_are_supported_by_words_on_the_page(
    drafted: str, testified: str
) -> None:
    found = _amount_results(
        f"The company lost {drafted} that year (KT000001).",
        f"A. We lost {testified} that year, give or take.",
    )

    assert [r.status for r in found] == ["supported"]
    assert "words read as" in found[0].message


@pytest.mark.parametrize(
    ("drafted", "printed"),
    [
        ("four point one million dollars", "$4,100,000.00"),
        ("eighty-four thousand two hundred fifty dollars", "USD 84,250"),
        ("twelve hundred dollars", "1,200 USD"),
    ],
)
def test_words_in_the_draft_are_supported_by_numerals_on_the_page(
    drafted: str, printed: str
) -> None:
    found = _amount_results(
        f"The company lost {drafted} that year (KT000001).",
        f"Net loss for the year: {printed}.",
    )

    assert [r.status for r in found] == ["supported"]


def test_a_different_amount_in_words_is_a_finding_that_says_how_it_read_the_words() -> None:
    found = _amount_results(
        "The company lost $4.2 million that year (KT000001).",
        "A. We lost four point one million dollars that year.",
    )

    assert [r.status for r in found] == ["contradicted"]
    assert "four point one million dollars" in found[0].message
    assert "the page's words read as $4,100,000.00" in found[0].message


def test_another_currency_is_not_the_same_amount() -> None:
    found = _amount_results(
        "The fee was €3,500 (KT000001).", "The fee of $3,500.00 was paid on signing."
    )

    assert [r.status for r in found] == ["contradicted"]


def test_nonsense_number_words_on_a_page_neither_crash_nor_support() -> None:
    found = _amount_results(
        "The company lost $200 that year (KT000001).",
        "A. hundred hundred dollars, a trillion trillion dollars, " + "one " * 3_000 + "dollars",
    )

    assert [r.status for r in found] != ["supported"]


def test_a_transcript_line_number_inside_an_amount_in_words_is_no_part_of_it() -> None:
    testimony = "Q. How much?\n 4  A. We lost four point one\n 5  million dollars that year."

    assert amount_values(testimony) == [(28, 62, "410000000")]  # not "5 million dollars"
    assert parse_amount("Twelve hundred\n 5  dollars, and\n 6  twenty cents") == "120020"
    found = _amount_results("The company lost $4.1 million that year (KT000001).", testimony)
    assert [r.status for r in found] == ["supported"]
