"""Id. and Ibid. after a record cite (issue 28 req 1, issue 20 req 1), from the styles' written
rules: "id." names the authority cited immediately before, at the pin it gives (Bluebook rule
4.1; "Id. at 4"), and only where that citation names one source; in the California Style
Manual (section 1:2) "Id." is the source just cited at another page ("(Id. at p. 4.)") and
"Ibid." the same source at the same page ("(Ibid.)"), each a citation sentence of its own that
vouches for the sentence before. The pin counts as the record cite before it counts: a Bates
cite in its production's numbers, a cite naming its document ("Ex. 2 at 1", "Subcontract at
3") in that document's pages, a deposition cite in its page:line. The packets are invented:
each page states one fact of made-up words, so that only that page carries it."""

import pytest

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex
from tests.verification.packets import text_index
from tests.verification.test_transcript_line_cites import INDEX as TRANSCRIPTS

# (file name, pages): the facts are the only words a page shares with a sentence.
DOCUMENTS = [
    (
        "doc-1.pdf",
        [
            "Quorvel ratified the Brandimax ledger in the first week.",
            "Tessaly audited the Vornick accounts during spring.",
        ],
    ),
    (
        "Subcontract.pdf",
        [
            "SUBCONTRACT\nMarlow signed the Pendrake subcontract for the warehouse.",
            "Ostrand repaired the Kelvane boiler twice.",
            "Ulric inspected the Ferrow roof in winter.",
        ],
    ),
]
FIRST = "Quorvel ratified the Brandimax ledger"
SECOND = "Tessaly audited the Vornick accounts"
BOILER = "Ostrand repaired the Kelvane boiler"
ROOF = "Ulric inspected the Ferrow roof"


def _index(prefix: str) -> PacketIndex:
    # Pages stamped PREFIX000001-PREFIX000005: doc-1.pdf 1-2, Subcontract.pdf 3-5.
    return text_index(prefix, DOCUMENTS)


def _findings(text: str, index: PacketIndex, prefix: str) -> dict[str, Finding]:
    claims = extract_claims(text, bates_prefixes=[prefix])
    return {f.claim.text: f for f in verify_text(text, claims, index) if f.claim.kind != "date"}


PREFIXES = ["QZR", "HX-", "LAWD_"]


# --- After a Bates cite -----------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("form", ["(Id. at p. 2.)", "Id. at 2.", "(Id. at 2.)", "See id. at 2."])
def test_an_id_page_after_a_bates_cite_is_that_page_of_its_document_and_is_checked(
    prefix: str, form: str
) -> None:
    # PREFIX000003 is page 1 of Subcontract.pdf: "Id. at 2" is its page 2, PREFIX000004.
    index = _index(prefix)
    cite = f"{prefix}000003"
    pin = form.rstrip(".)").lstrip("(").removeprefix("See ")
    opening = f"Marlow signed the Pendrake subcontract ({cite})."

    right = _findings(f"{opening} {BOILER}. {form}", index, prefix)
    wrong = _findings(f"{opening} {ROOF}. {form}", index, prefix)

    assert right[pin].status == "supported", right[pin].message
    assert f"page 2 of Subcontract.pdf; {prefix}000004" in right[pin].message
    # The roof is on page 3 (PREFIX000005), not on page 2: the Id.'s page does not carry it.
    assert wrong[pin].status == "unsupported", wrong[pin].message
    assert f"{prefix}000005" in wrong[pin].message
    assert wrong[cite].status == "supported"


@pytest.mark.parametrize("prefix", PREFIXES)
def test_an_id_page_its_document_lacks_is_unsupported(prefix: str) -> None:
    index = _index(prefix)

    found = _findings(f"{FIRST} ({prefix}000001). {SECOND}. (Id. at p. 9.)", index, prefix)

    assert found["Id. at p. 9"].status == "unsupported"
    assert f"nor is page 9 a page of the document of {prefix}000001" in found["Id. at p. 9"].message


@pytest.mark.parametrize("form", ["(Ibid.)", "Id.", "(Id.)"])
def test_ibid_and_a_bare_id_are_the_same_page_again(form: str) -> None:
    index = _index("QZR")
    word = form.strip("()")

    same = _findings(f"{SECOND} (QZR000002). Tessaly audited them again. {form}", index, "QZR")
    other = _findings(f"{SECOND} (QZR000002). {ROOF}. {form}", index, "QZR")

    assert same[word].claim.bates == same["QZR000002"].claim.bates
    assert same[word].status == "supported", same[word].message
    assert other[word].status == "unsupported" and "QZR000005" in other[word].message


def test_a_bates_number_after_id_is_the_cite_and_no_unresolved_short_form() -> None:
    index = _index("QZR")

    found = _findings(f"{FIRST} (QZR000001). {BOILER}. Id. at QZR000004.", index, "QZR")

    assert set(found) == {"QZR000001", "QZR000004"}
    assert found["QZR000004"].status == "supported", found["QZR000004"].message
    wrong = _findings(f"{FIRST} (QZR000001). {BOILER}. Id. at QZR000002.", index, "QZR")
    assert wrong["QZR000002"].status == "unsupported"


# --- After a cite naming its document ---------------------------------------------------------


@pytest.mark.parametrize(
    ("cite", "form", "pin"),
    [
        ("(Ex. 2 at 1)", "Id. at 2.", "Id. at 2"),
        ("(Ex. 2, p. 1)", "(Id. at p. 2.)", "Id. at p. 2"),
        ("(Subcontract at 1)", "Id. at 2.", "Id. at 2"),
        ("(See Subcontract, p. 1)", "(Id. at p. 2.)", "Id. at p. 2"),
    ],
)
def test_an_id_after_a_cite_naming_its_document_is_that_documents_page(
    cite: str, form: str, pin: str
) -> None:
    index = _index("QZR")
    opening = f"Marlow signed the Pendrake subcontract {cite}."

    right = _findings(f"{opening} {BOILER}. {form}", index, "QZR")
    wrong = _findings(f"{opening} {ROOF}. {form}", index, "QZR")
    past = _findings(f"{opening} {ROOF}. {form.replace('2', '7')}", index, "QZR")

    assert right[pin].status == "supported", right[pin].message
    assert "Subcontract.pdf" in right[pin].message or "document 2" in right[pin].message
    assert wrong[pin].status == "unsupported", wrong[pin].message
    assert "QZR000005" in wrong[pin].message  # where the roof is
    past_pin = pin.replace("2", "7")
    assert past[past_pin].status == "unsupported" and "no page 7" in past[past_pin].message


# --- After a deposition cite ------------------------------------------------------------------


def test_an_id_after_a_deposition_cite_is_checked_by_its_page_and_lines() -> None:
    opening = "Only the night foreman Dmitri Alsop was at the loading dock (Voss Dep. 45:3-6)."
    sentence = "The forklift rolled into the racking with its parking brake never set."

    def lines(pin: str) -> Finding:
        text = f"{opening} {sentence} Id. at {pin}."
        claims = extract_claims(text, bates_prefixes=["VOS"])
        return next(
            f for f in verify_text(text, claims, TRANSCRIPTS) if f.claim.text.startswith("Id.")
        )

    assert lines("46:3-4").status == "supported", lines("46:3-4").message
    wrong = lines("45:3-5")
    assert wrong.status == "unsupported" and "46:" in wrong.message
    assert wrong.check == "record_cite_lines"


# --- What Id. does not bind to -----------------------------------------------------------------


def test_an_id_after_a_citation_of_several_sources_is_no_record_cite() -> None:
    # Rule 4.1: "id." may follow only a citation of one source; which one is meant is unsaid.
    claims = extract_claims(
        f"{FIRST} (QZR000001; Ex. 2 at 1). {SECOND}. Id. at 2.", bates_prefixes=["QZR"]
    )

    assert [c.text for c in claims if c.kind == "record_cite"] == ["QZR000001", "Ex. 2 at 1"]


def test_an_id_after_a_case_cited_after_the_record_is_the_cases() -> None:
    claims = extract_claims(
        f"{FIRST} (QZR000001). Smith v. Jones, 123 F.3d 456, 460 (9th Cir. 1999). {SECOND}. "
        "Id. at 461.",
        bates_prefixes=["QZR"],
    )

    (id_cite,) = [c for c in claims if c.text == "Id. at 461"]
    assert id_cite.kind == "case_citation"
    assert id_cite.citation is not None and id_cite.citation.pin == "461"
