"""Dates written with the day in words (issue 28 req 4), read from the forms' rules: an ordinal
day ("second", "nineteenth", "twenty-first" or "twenty first") before "of" or "day of" and the
month, or after the month ("April second", "April the second"), with the year in digits. Such a
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
