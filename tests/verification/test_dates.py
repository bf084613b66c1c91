"""Dates on hostile or odd pages: the parser's case-insensitive patterns match Unicode case
variants of month names, and every such match must find its month or be skipped, never
raise (one odd page must not fail a whole verification)."""

from apps.verification import checks
from apps.verification.claims import extract_claims
from apps.verification.dates import date_values
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
