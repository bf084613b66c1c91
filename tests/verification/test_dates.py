"""Dates on hostile or odd pages: the parser's case-insensitive patterns match Unicode case
variants of month names, and every such match must find its month or be skipped, never
raise (one odd page must not fail a whole verification)."""

import pytest

from apps.verification import checks
from apps.verification.claims import extract_claims
from apps.verification.dates import (
    context_years,
    date_values,
    is_month_day,
    month_day_values,
    same_day,
)
from apps.verification.index import PacketIndex
from tests.verification.test_index import page


def test_a_long_s_or_capital_month_is_read_as_its_month() -> None:
    text = "Signed \u017feptember 3, 2024 and SEPTEMBER 4, 2024."

    assert [iso for _s, _e, iso in date_values(text)] == ["2024-09-03", "2024-09-04"]


def test_a_packet_page_with_a_long_s_month_builds_and_supports_the_date() -> None:
    index = PacketIndex.build(
        [page(1, "The lease was signed \u017feptember 3, 2024.", bates="KT000001")]
    )
    text = "The lease was signed on September 3, 2024."

    results = checks.verify_text(text, extract_claims(text, bates_prefixes=["KT"]), index)

    assert [(r.claim.kind, r.status) for r in results] == [("date", "supported")]


# --- year-less dates -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("The November 8 outage ended.", [("November 8", "--11-08")]),
        ("On August 27, the president admitted it.", [("August 27", "--08-27")]),
        ("Payment was due Oct. 11th at noon.", [("Oct. 11th", "--10-11")]),
        ("NOVEMBER 8 was a Wednesday.", [("NOVEMBER 8", "--11-08")]),
        ("Aug 27 4:52 PM Teodor: the trusses", [("Aug 27", "--08-27")]),
        ("They met on 8 November and on the 3rd day of March.", [
            ("8 November", "--11-08"), ("3rd day of March", "--03-03")]),
        ("From 3 to 8 May the site was shut.", [("8 May", "--05-08")]),
        ("Leap day: Feb 29.", [("Feb 29", "--02-29")]),
        ("The inspection ran March 15-20.", [("March 15", "--03-15")]),
    ],
)  # fmt: skip
def test_year_less_dates_are_month_and_day(text: str, found: list[tuple[str, str]]) -> None:
    assert [(text[a:b], v) for a, b, v in month_day_values(text)] == found


@pytest.mark.parametrize(
    "text",
    [
        "Signed November 8, 2023 and Nov 8 2023 and 8 November 2023.",  # full dates
        "the court may 5 times refuse",  # the modal verb
        "Section 12 May apply; Rule 56 March; Exhibit 3 June",  # labels, not days
        "Sept. 31 and February 30 are no days",
        "In March 2024 and May, 2023 (month and year only)",
        "Form 10-K, Dkt. 12, 2023, Mar. 3/4",
    ],
)
def test_what_is_no_year_less_date(text: str) -> None:
    assert month_day_values(text) == []


def test_a_year_less_date_is_any_date_of_its_month_and_day_unless_years_narrow_it() -> None:
    assert same_day("--11-08", "2023-11-08")
    assert same_day("--11-08", "--11-08")
    assert not same_day("--11-08", "2023-11-09")
    assert same_day("--11-08", "2023-11-08", (2023,))
    assert not same_day("--11-08", "2022-11-08", (2023,))
    assert same_day("--11-08", "--11-08", (2023,))  # a page's year-less date has no year
    assert not same_day("2023-11-08", "--11-08")  # a full date needs its year on the page
    assert not is_month_day("2023-11-08") and is_month_day("--11-08")


def test_the_years_of_a_year_less_date_come_from_its_sentence_and_cross_a_year_end() -> None:
    assert context_years("--03-04", [], 10) == ()
    assert context_years("--03-04", [(0, "2023-03-03")], 20) == (2023,)
    # "From December 20, 2023 to January 5": January may be in the next year.
    assert context_years("--01-05", [(5, "2023-12-20")], 30) == (2023, 2024)
    # "From December 20 to January 5, 2024": December may be in the year before.
    assert context_years("--12-20", [(30, "2024-01-05")], 5) == (2023, 2024)
    # Not a year on: "March 4, 2023 ... March 3" is of 2023.
    assert context_years("--03-03", [(0, "2023-03-04")], 20) == (2023,)
    assert context_years("--02-29", [(0, "2022-12-20")], 20) == (2022,)  # 2023 has no Feb 29
    # Full dates of two years give no year.
    assert context_years("--06-01", [(0, "2022-01-01"), (40, "2023-01-01")], 20) == ()


def test_a_page_year_less_date_is_indexed_by_month_and_day() -> None:
    index = PacketIndex.build(
        [
            page(1, "Aug 27 4:52 PM Teodor: the trusses came in wrong.", bates="KT000001"),
            page(2, "Invoice dated 2024-08-27 for trusses.", bates="KT000002"),
            page(3, "Nothing on that day.", bates="KT000003"),
        ]
    )
    assert list(index.value_pages("date", "--08-27")) == [0, 1]
    assert list(index.value_pages("date", "2024-08-27")) == [1]
    assert list(index.value_pages("date", "--08-28")) == []
    assert "august" in index.stems[0]  # a page dated Aug 27 speaks of August
