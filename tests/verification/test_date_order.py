"""Numeric dates read in the deployment's order (issue 28 req 4): LEXWEB_DATE_ORDER is "mdy"
(the default, US practice) or "dmy". "3/7/24" is March 7, 2024 month first and 3 July 2024 day
first, on the draft and on the page alike; a date valid only the other way is read that way; a
finding on an ambiguous date says which reading it took. Dates in other written forms ("4
December 2023", "the second of April, 2007", "Feb. 14") do not depend on the order."""

import pytest
from django.test import override_settings

from apps.verification import checks
from apps.verification.claims import extract_claims
from apps.verification.dates import date_order, date_values, month_day_values, reading
from apps.verification.index import PacketIndex
from tests.lexweb.test_settings import _settings_probe
from tests.verification.test_index import page


@pytest.mark.parametrize(
    ("text", "mdy", "dmy"),
    [
        ("3/7/24", "2024-03-07", "2024-07-03"),
        ("03/07/2024", "2024-03-07", "2024-07-03"),
        ("03.07.2024", "2024-03-07", "2024-07-03"),
        ("3-7-2024", "2024-03-07", "2024-07-03"),
        ("25/12/2024", "2024-12-25", "2024-12-25"),  # no month 25: day first either way
        ("12/25/2024", "2024-12-25", "2024-12-25"),  # no month 25: month first either way
        ("7/7/24", "2024-07-07", "2024-07-07"),
        ("2024-03-07", "2024-03-07", "2024-03-07"),  # ISO is year, month, day
        ("4 December 2023", "2023-12-04", "2023-12-04"),
        ("the second of April, 2007", "2007-04-02", "2007-04-02"),
    ],
)
def test_numeric_dates_follow_the_order_and_others_do_not(text: str, mdy: str, dmy: str) -> None:
    assert [v for _, _, v in date_values(text, "mdy")] == [mdy]
    assert [v for _, _, v in date_values(text, "dmy")] == [dmy]


@pytest.mark.parametrize("text", ["13/13/2024", "0/5/2024", "3/32/24", "99/99/99"])
def test_no_date_either_way_is_no_date(text: str) -> None:
    assert date_values(text, "mdy") == date_values(text, "dmy") == []


def test_a_year_less_date_is_read_from_its_month_name() -> None:
    assert [v for _, _, v in month_day_values("It was filed on Feb. 14 and served later.")] == [
        "--02-14"
    ]


def test_the_reading_says_which_order_it_took() -> None:
    assert reading("3/7/24", "2024-03-07", "mdy") == (
        "read as March 7, 2024 (a two-digit year): month first, as LEXWEB_DATE_ORDER=mdy says"
    )
    assert reading("3/7/2024", "2024-07-03", "dmy") == (
        "read as July 3, 2024: day first, as LEXWEB_DATE_ORDER=dmy says"
    )
    assert "the only reading with a month" in reading("25/12/2024", "2024-12-25", "mdy")
    assert reading("March 7, 2024", "2024-03-07") == ""
    assert reading("the seventh of March, 2024", "2024-03-07") == "read as March 7, 2024"


def test_the_order_comes_from_settings() -> None:
    assert date_order() == "mdy"
    with override_settings(LEXWEB_DATE_ORDER="dmy"):
        assert date_order() == "dmy"
        assert [v for _, _, v in date_values("3/7/24")] == ["2024-07-03"]


def _date_results(draft: str, source: str) -> list[checks.Finding]:
    index = PacketIndex.build([page(1, source, bates="KT000001")])
    results = checks.verify_text(draft, extract_claims(draft, bates_prefixes=["KT"]), index)
    return [r for r in results if r.claim.kind == "date"]


def test_an_ambiguous_draft_date_is_supported_by_its_reading_and_says_so() -> None:
    found = _date_results(
        "The notice was served on 3/7/24 (KT000001).", "Notice served March 7, 2024 by hand."
    )

    assert [r.status for r in found] == ["supported"]
    assert "'3/7/24' read as March 7, 2024" in found[0].message
    assert "month first" in found[0].message


def test_day_first_deployment_reads_both_sides_day_first() -> None:
    with override_settings(LEXWEB_DATE_ORDER="dmy"):
        found = _date_results(
            "The notice was served on 3/7/24 (KT000001).", "Notice served 3 July 2024 by hand."
        )
        both = _date_results(
            "The notice was served on 3/7/24 (KT000001).", "Notice served on 03.07.2024."
        )

    assert [r.status for r in found] == ["supported"]
    assert "day first, as LEXWEB_DATE_ORDER=dmy says" in found[0].message
    assert [r.status for r in both] == ["supported"]


def test_the_other_reading_is_a_finding_that_names_the_reading_taken() -> None:
    found = _date_results(
        "The notice was served on 3/7/24 (KT000001).", "Notice served 3 July 2024 by hand."
    )

    assert [r.status for r in found] == ["contradicted"]
    assert "'3/7/24' read as March 7, 2024" in found[0].message


def test_a_date_in_words_on_the_page_supports_the_numeric_date_and_says_how_it_read_it() -> None:
    found = _date_results(
        "The notice was served on 4/2/2007 (KT000001).",
        "The notice was served on the second of April, 2007, by hand.",
    )

    assert [r.status for r in found] == ["supported"]
    assert "the page's 'second of April, 2007' read as April 2, 2007" in found[0].message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ymd", "LEXWEB_DATE_ORDER must be mdy (month first) or dmy (day first), not 'ymd'."),
        ("us", "LEXWEB_DATE_ORDER must be mdy (month first) or dmy (day first), not 'us'."),
    ],
)
def test_a_bad_date_order_stops_the_start_naming_the_variable(value: str, message: str) -> None:
    result = _settings_probe({"LEXWEB_DATE_ORDER": value}, "settings.LEXWEB_DATE_ORDER")

    assert result.returncode != 0
    assert message in result.stderr


def test_the_date_order_setting_is_read_case_insensitively() -> None:
    result = _settings_probe({"LEXWEB_DATE_ORDER": " DMY "}, "settings.LEXWEB_DATE_ORDER")

    assert result.stdout.strip() == "dmy", result.stderr


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("It was served on the second of April by hand.", "--04-02"),
        ("It was served on the twenty-first day of June.", "--06-21"),
        ("It was served April the second.", "--04-02"),
        ("It was served on April second.", "--04-02"),
    ],
)
def test_a_year_less_date_with_the_day_in_words_is_a_month_and_day(text: str, value: str) -> None:
    assert [v for _, _, v in month_day_values(text)] == [value]


@pytest.mark.parametrize(
    "text",
    [
        "the thirtieth of February",  # no such day
        "a May second-degree burn",  # an adjective, not a day
        "the first of our meetings",  # no month
        "the second of April, 2007",  # a full date, not a year-less one
    ],
)
def test_what_is_no_year_less_date_in_words_is_not_read_as_one(text: str) -> None:
    assert month_day_values(text) == []


@pytest.mark.parametrize(
    ("drafted", "source"),
    [
        ("April 2", "The notice was served on the second of April by hand."),
        ("the second of April", "The notice was served April 2 by hand."),
        ("April the second", "The notice was served on the second day of April by hand."),
    ],
)
def test_a_year_less_date_in_words_is_matched_on_both_sides(drafted: str, source: str) -> None:
    found = _date_results(f"The notice was served on {drafted} (KT000001).", source)

    assert [r.status for r in found] == ["supported"]


def test_another_day_in_words_does_not_support_a_year_less_date() -> None:
    found = _date_results(
        "The notice was served on April 2 (KT000001).",
        "The notice was served on the third of April by hand.",
    )

    assert [r.status for r in found] != ["supported"]
