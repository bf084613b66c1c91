"""Issue 20 req 1 / issue 28 req 6: whatever stands where a record cite belongs and is not a
record cite of this case is unsupported (kind `bates`), decided by what the thing is, not by a
list of its words; and what sits in a heading or closes a case citation is no such cite."""

import pytest

from apps.verification.claims import Claim, extract_claims

PREFIX = "KLM"


def _claims(text: str) -> list[Claim]:
    return extract_claims(text, bates_prefixes=[PREFIX])


def _not_cites(text: str) -> list[str]:
    return [c.text for c in _claims(text) if c.kind == "not_a_record_cite"]


@pytest.mark.parametrize(
    "numbered",
    [
        "Acct. No. 4410-7782",
        "Invoice No. 88-1",
        "Policy Number 77-0042",
        "Claim #4471",
        "Loan No. 1999-2001",  # its last group reads like a year, but it is one number
        "Purchase Order No. 12/2020",
    ],
)
def test_a_numbered_thing_closing_a_clause_is_not_a_record_cite(numbered: str) -> None:
    text = f"The lender refused the second draw ({numbered}). The note (KLM0000003)."
    assert [(c.kind, c.text) for c in _claims(text)] == [
        ("not_a_record_cite", numbered),
        ("record_cite", "KLM0000003"),
    ]


@pytest.mark.parametrize(
    "named", ["Invoice 88213", "Acct. 5521-0091", "File 23-118204", "Ticket 4471", "DGX A100"]
)
def test_a_thing_named_by_a_long_number_or_a_model_name_is_not_a_record_cite(named: str) -> None:
    assert _not_cites(f"The lender refused the second draw ({named}).") == [named]


@pytest.mark.parametrize(
    "law",
    ["Rule 10b-5", "Section 2-207", "Form 1099", "Section 1031", "Claim 3", "about 1500"],
)
def test_the_laws_numbered_units_and_quantities_are_no_things(law: str) -> None:
    assert _not_cites(f"The lender refused the second draw ({law}).") == []


@pytest.mark.parametrize("record", ["Dkt. No. 12", "ECF No. 40", "Doc. No. 7", "Docket 2021-14"])
def test_this_cases_own_numbered_cites_stay_record_cites(record: str) -> None:
    assert _not_cites(f"The motion was denied ({record}).") == []


@pytest.mark.parametrize("code", ["L40S", "X86K", "MI300X"])
def test_a_designation_with_digits_between_capitals_is_not_a_record_cite(code: str) -> None:
    assert _not_cites(f"The nodes were replaced in March ({code}).") == [code]


@pytest.mark.parametrize("written", ["Q3", "FY23", "2019-2020", "H1", "W-2", "Mar. 3, 2019"])
def test_periods_and_short_forms_are_still_no_cite(written: str) -> None:
    assert _not_cites(f"Revenue fell sharply ({written}).") == []


@pytest.mark.parametrize(
    "reference",
    [
        "generated case digest",
        "machine-drafted notes",
        "computer-written overview at 4",
        "AI-produced outline",
        "witness outline, rev. 3",
        "deal overview revision 2",
    ],
)
def test_a_reference_that_says_it_was_generated_or_is_a_revision_is_not_a_record_cite(
    reference: str,
) -> None:
    assert _not_cites(f"The buyer walked away in June ({reference}).") == [reference]


@pytest.mark.parametrize(
    "remark", ["as drafted", "drafted by counsel for both sides", "the revised lease"]
)
def test_a_remark_on_how_a_document_was_drafted_is_no_reference(remark: str) -> None:
    text = f"The parties signed the lease in the form agreed (KLM0000002) ({remark})."
    assert _not_cites(text) == []


def test_a_case_number_in_a_heading_is_no_cite_but_in_a_sentence_it_is() -> None:
    heading = "# Smith v. Jones (Multnomah County No. 23CV41877)\n\nThe loan was made (KLM0000001)."
    assert _not_cites(heading) == []
    sentence = "The loan was made (Multnomah County No. 23CV41877)."
    assert _not_cites(sentence) == ["Multnomah County No. 23CV41877"]


def test_a_year_closing_a_case_parenthetical_is_still_read_as_a_year() -> None:
    assert _not_cites("Courts agree. Smith v. Jones, 12 F.4th 100, 104 (9th Cir. 2021).") == []
