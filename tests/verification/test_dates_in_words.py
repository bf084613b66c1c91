"""Dates written with the day in words (issue 28 req 4), read from the forms' rules: an ordinal
day ("second", "nineteenth", "twenty-first" or "twenty first") before "of" or "day of" and the
month, or after the month ("April second", "April the second"), with the year in digits or in
words as English writes years ("two thousand seven", "two thousand and seven", "nineteen
ninety-nine", "twenty twenty-three", "nineteen oh five", "nineteen hundred and five"). Such a
date on a source page supports the draft's numeric date ("April 2, 2007", "2 April 2007",
"4/2/2007" read month first). In a transcript a line's number may stand between the words."""

import pytest

from apps.verification import checks
from apps.verification.claims import extract_claims
from apps.verification.dates import date_values
from apps.verification.index import PacketIndex
from tests.verification.test_index import page


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("the second of April, 2007", "2007-04-02"),
        ("the nineteenth of October, 2023", "2023-10-19"),
        ("April second, 2007", "2007-04-02"),
        ("April the second, 2007", "2007-04-02"),
        ("the first day of January 2020", "2020-01-01"),
        ("the twenty-first of September, 2024", "2024-09-21"),
        ("the thirty first day of December, 1999", "1999-12-31"),
        ("Tenth of May 2021", "2021-05-10"),
        ("THE TWELFTH OF AUGUST, 2015", "2015-08-12"),
        ("the thirtieth of Nov. 2018", "2018-11-30"),
    ],
)
def test_an_ordinal_day_in_words_is_read(text: str, iso: str) -> None:
    assert [v for _, _, v in date_values(text)] == [iso]


@pytest.mark.parametrize(
    "text",
    [
        "the thirtieth of February, 2020",  # no such day
        "the thirty-second of May, 2020",  # no such ordinal day
        "the first of the month, 2020",  # no month
        "the second of April",  # no year: not a full date
        "the second quarter of April 2007",  # a word between
    ],
)
def test_what_is_no_date_in_words_is_not_read_as_one(text: str) -> None:
    assert date_values(text) == []


def test_a_line_number_inside_a_transcript_date_is_no_part_of_it() -> None:
    found = date_values("A. It was on the\n 5  nineteenth of June, 2021.\n 6  Q. And then?")
    assert [v for _, _, v in found] == ["2021-06-19"]
    # the number of the line the month starts is not the day
    assert [v for _, _, v in date_values("the second of\n 7  April, 2007")] == ["2007-04-02"]
    assert [v for _, _, v in date_values("on April 22,\n 5  2021.")] == ["2021-04-22"]


@pytest.mark.parametrize("drafted", ["April 2, 2007", "2 April 2007", "4/2/2007", "Apr. 2, 2007"])
@pytest.mark.parametrize(
    "source",
    [
        "The notice was served on the second of April, 2007, by hand.",
        "The notice was served April second, 2007, by hand.",
        "The notice was served on the\n 9  second day of April, 2007, by hand.",
    ],
)
def test_a_source_date_in_words_supports_the_drafts_numeric_date(drafted: str, source: str) -> None:
    index = PacketIndex.build([page(1, source, bates="KT000001")])
    text = f"The notice was served on {drafted} (KT000001)."

    results = checks.verify_text(text, extract_claims(text, bates_prefixes=["KT"]), index)

    dates = [r for r in results if r.claim.kind == "date"]
    assert [r.status for r in dates] == ["supported"]


def test_a_different_day_in_words_does_not_support_the_date() -> None:
    index = PacketIndex.build(
        [page(1, "The notice was served on the third of April, 2007, by hand.", bates="KT000001")]
    )
    text = "The notice was served on April 2, 2007 (KT000001)."

    results = checks.verify_text(text, extract_claims(text, bates_prefixes=["KT"]), index)

    assert [r.status for r in results if r.claim.kind == "date"] != ["supported"]


# --- years in words ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("the second of April, two thousand seven", "2007-04-02"),
        ("the second day of April, two thousand and seven", "2007-04-02"),
        ("April 2, two thousand seven", "2007-04-02"),
        ("2 April two thousand", "2000-04-02"),
        ("the 3rd day of March, twenty twenty-three", "2023-03-03"),
        ("March third, twenty twenty three", "2023-03-03"),
        ("December 31, nineteen ninety-nine", "1999-12-31"),
        ("May 1, twenty ten", "2010-05-01"),
        ("the fifth of June, nineteen oh five", "1905-06-05"),
        ("the fifth of June, nineteen hundred and five", "1905-06-05"),
        ("January 1, nineteen hundred", "1900-01-01"),
        ("April 2, TWO THOUSAND SEVEN", "2007-04-02"),
    ],
)
def test_a_year_in_words_is_read_by_how_english_writes_years(text: str, iso: str) -> None:
    assert [v for _, _, v in date_values(text)] == [iso]


@pytest.mark.parametrize(
    "text",
    [
        "on April 2, twenty people came",  # "twenty" alone is no year
        "April 2, nineteen five",  # a century and a unit: no year anyone writes
        "April 2, two thousand seven hundred dollars",  # a number that goes on is an amount
        "April 2, twenty twenty-three million",
        "the thirtieth of February, two thousand seven",  # no such day
        "April 2, three thousand",  # past any year a filing names
    ],
)
def test_number_words_that_are_no_year_make_no_date(text: str) -> None:
    assert date_values(text) == []


def test_a_line_number_inside_a_year_in_words_is_no_part_of_it() -> None:
    found = date_values("A. On the second of\n 7  April, two thousand\n 8  seven.\n 9  Q. Yes?")
    assert [v for _, _, v in found] == ["2007-04-02"]


@pytest.mark.parametrize("drafted", ["April 2, 2007", "2 April 2007", "4/2/2007"])
def test_a_source_year_in_words_supports_the_drafts_numeric_date(drafted: str) -> None:
    source = "A. It was served on the second of April, two thousand and seven, by hand."
    index = PacketIndex.build([page(1, source, bates="KT000001")])
    text = f"The notice was served on {drafted} (KT000001)."

    results = checks.verify_text(text, extract_claims(text, bates_prefixes=["KT"]), index)

    dates = [r for r in results if r.claim.kind == "date"]
    assert [r.status for r in dates] == ["supported"]


def test_another_year_in_words_does_not_support_the_date() -> None:
    source = "A. It was served on the second of April, two thousand and eight, by hand."
    index = PacketIndex.build([page(1, source, bates="KT000001")])
    text = "The notice was served on April 2, 2007 (KT000001)."

    results = checks.verify_text(text, extract_claims(text, bates_prefixes=["KT"]), index)

    assert [r.status for r in results if r.claim.kind == "date"] != ["supported"]


@pytest.mark.parametrize("spaces", range(1, 14))
def test_a_page_reads_a_year_in_words_whole_however_far_it_runs_past_the_day(spaces: int) -> None:
    """A page's dates are read around its figures; a long year in words after the day ("the
    2nd day of April, two thousand and twenty-three") is read whole wherever the look around
    the figure would have ended, never as a shorter year ("two thousand and twenty", "two
    thousand")."""
    source = "x " * 30 + "the 2nd day of April," + " " * spaces + "two thousand and "
    source += "twenty-three, by hand. " + "y " * 60
    index = PacketIndex.build([page(1, source, bates="KT000001")])
    assert {v.value for v in index.dates[0]} == {"2023-04-02"}


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("on the twenty-\nninth of August, twenty twenty-two.\nShe wrote", "2022-08-29"),
        ("on the thirty-\nfirst of July, two thousand\ntwenty-four.\nShe wrote", "2024-07-31"),
        ("on the twenty-\nninth of August.\nShe wrote", "--08-29"),
    ],
)
def test_a_page_reads_a_day_in_words_broken_at_a_lines_end(text: str, iso: str) -> None:
    """A day in words broken by a hyphen at a line's end is one word of the page
    ("twenty-\\nninth"); the page's dates in words are read all the same, with the year in words
    where it has one (no figure stands near them)."""
    index = PacketIndex.build([page(1, text, bates="KT000001")])
    assert [v.value for v in index.dates[0]] == [iso]
