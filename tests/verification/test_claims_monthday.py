"""Year-less dates ("on October 11", "August 27 (OVH-0003004)", "Oct. 11th") as claims and as
checks, on packets of our own: with a record cite the cited page must carry that month and day
(in any year, or in the year the sentence's full dates give); without one, some page must."""

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord

PREFIX = "WRN-"
MESSAGES = """Messages with Teodor Velloria
Aug 27, 2024 4:52 PM Teodor: The trusses for the deck roof came in wrong. Supplier
says three weeks for new ones.
Sep 18, 2024 8:03 AM Teodor: Crew is back Monday. We will finish the punch list by
October 4."""
LOG = """SITE LOG - FERNHILL ADDITION
Oct 11 crane delivered; trusses set on the north wall.
Oct 14 inspector signed off the framing."""
LETTER = """Dear Ms. Ostrander,
On March 3, 2022 we agreed the schedule. The deposit of $9,000.00 was paid on March 4, 2023.
Yours, Velloria Builders"""
OUTAGE = """INCIDENT DETAIL - 2023
2023-11-08 INC-2407 Full outage, 854 min. Cause: failed schema migration, rolled back."""
NOTES = """AVAILABILITY REPORT NOTES
Availability is measured by synthetic checks from three regions every 60 seconds.
Report generated 2024-01-05 for the litigation hold."""


def _packet() -> PacketIndex:
    texts = [MESSAGES, LOG, LETTER, OUTAGE, NOTES]
    return PacketIndex.build(
        [
            PageRecord(
                position=i + 1,
                document_id=i + 1,
                filename=f"doc-{i + 1}.pdf",
                page_number=1,
                bates=(f"{PREFIX}{3001 + i:07d}",),
                text=text,
                source="text_layer",
                ocr_confidence=None,
                origin="client",
            )
            for i, text in enumerate(texts)
        ]
    )


INDEX = _packet()


def _check(text: str) -> list[Finding]:
    claims = extract_claims(text, bates_prefixes=[PREFIX])
    return verify_text(text, claims, INDEX)


def _date(findings: list[Finding], text: str) -> Finding:
    found = [f for f in findings if f.claim.kind == "date" and f.claim.text == text]
    assert len(found) == 1, [(f.claim.kind, f.claim.text) for f in findings]
    return found[0]


def test_year_less_dates_are_date_claims_outside_quotations_and_cites() -> None:
    text = (
        'On October 11, the crane came. He wrote "we met on March 3 again" (WRN-0003003). '
        "Oct. 11th was a Friday. See Smith v. Jones, 512 F.3d 100 (9th Cir. Mar. 3, 2001)."
    )
    dates = [(c.text, c.value) for c in extract_claims(text) if c.kind == "date"]
    assert dates == [("October 11", "--10-11"), ("Oct. 11th", "--10-11")]


def test_a_year_less_date_on_its_cited_page_is_supported_in_any_year() -> None:
    found = _check("On August 27, the president admitted the trusses came in wrong (WRN-0003001).")

    date = _date(found, "August 27")
    assert date.status == "supported" and date.check == "date_on_cited_page"
    assert date.page is not None and date.match is not None
    assert date.page.text[date.match[0] : date.match[1]] == "Aug 27, 2024"
    cite = next(f for f in found if f.claim.kind == "record_cite")
    assert cite.status == "supported"


def test_a_wrong_year_less_date_under_a_right_cite_is_contradicted_naming_the_page_date() -> None:
    found = _check("On August 28, the president admitted the trusses came in wrong (WRN-0003001).")

    date = _date(found, "August 28")
    assert date.status == "contradicted"
    assert date.found_value == "2024-08-27" and "Aug 27, 2024" in date.message


def test_a_page_year_less_date_supports_a_year_less_claim_but_not_a_full_date() -> None:
    found = _check(
        "The crane was delivered on Oct. 11th (WRN-0003002). "
        "The crane was delivered on October 11, 2024 (WRN-0003002)."
    )

    assert _date(found, "Oct. 11th").status == "supported"
    # The page gives no year: a full date is not on it (it names the page's nearest date).
    full = _date(found, "October 11, 2024")
    assert full.status == "contradicted" and full.found_value == "--10-11"


def test_without_a_cite_some_page_must_carry_the_month_and_day() -> None:
    found = _check("The inspector came on October 14. Nothing happened on June 2.")

    kept = _date(found, "October 14")
    assert kept.status == "supported" and kept.check == "date_in_packet"
    missing = _date(found, "June 2")
    assert missing.status == "unsupported" and "appears nowhere" in missing.message


def test_the_sentence_year_narrows_a_year_less_date() -> None:
    # The letter's March 3 is of 2022 and its March 4 of 2023.
    found = _check(
        "The deposit was paid on March 4, 2023, a year after the schedule of March 3 (WRN-0003003)."
    )
    assert _date(found, "March 4, 2023").status == "supported"
    march_3 = _date(found, "March 3")
    assert march_3.claim.years == (2023,)
    assert march_3.status == "contradicted" and "2023" in march_3.message

    plain = _check("The schedule was agreed on March 3 (WRN-0003003).")
    assert _date(plain, "March 3").status == "supported"

    anywhere = _check("In 2023 terms, the payment on March 4, 2023 followed the March 3 talks.")
    talks = _date(anywhere, "March 3")
    assert talks.claim.years == (2023,) and talks.status == "unsupported"
    assert "in 2023" in talks.message


def test_a_year_less_date_across_a_year_end_takes_the_next_year() -> None:
    claims = extract_claims("The work ran from December 20, 2023 to January 5 (WRN-0003005).")
    date = next(c for c in claims if c.kind == "date" and c.text == "January 5")
    assert date.years == (2023, 2024)
    found = _check("The work ran from December 20, 2023 to January 5 (WRN-0003005).")
    assert _date(found, "January 5").status == "supported"  # the notes' 2024-01-05


def test_a_year_less_date_under_a_wrong_page_cite_is_read_as_one_without_a_cite() -> None:
    # The outage's details are on the incident page; the cite names the report's notes. The
    # one error is the cite's: the date is looked for in the whole packet.
    found = _check(
        "The November 8 outage was a full outage caused by a failed schema migration that "
        "was rolled back (WRN-0003005)."
    )

    cite = next(f for f in found if f.claim.kind == "record_cite")
    assert cite.status == "unsupported" and "WRN-0003004" in cite.message
    date = _date(found, "November 8")
    assert date.status == "supported" and date.page is not None
    assert date.page.bates == ("WRN-0003004",) and date.check == "date_in_packet"
    assert "WRN-0003005 is flagged" in date.message


def test_a_year_less_date_under_a_right_cite_does_not_hide_a_wrong_one() -> None:
    # The year-less date is read as words of the segment: the cite is still judged on them.
    found = _check(
        "On November 9 the failed schema migration caused a full outage, rolled back (WRN-0003005)."
    )
    cite = next(f for f in found if f.claim.kind == "record_cite")
    assert cite.status == "unsupported"
    # Not on the right page either: the date is flagged too.
    assert _date(found, "November 9").status in ("contradicted", "unsupported")
