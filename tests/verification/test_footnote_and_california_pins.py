"""Footnote pins and California Style Manual cites (issue 28 requirements 1 and 2), from the
styles' written rules, on opinions printed to real PDFs with pymupdf and read back by their
text layer.

Bluebook rule 3.2(b): a note is pinned after its page, "802 n.4", "801 nn.2-3"; the note must
exist and sit on (or continue onto) that page. California Style Manual 1:1-1:4: the year in
parentheses before the volume, "at p." and "at pp.", "fn.", "(Id. at p. N.)" for the source
just cited at another page, "(Ibid.)" for the same page, "(Name, supra, vol rep at p. N.)"."""

import time

import pymupdf
import pytest

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.claims.styles import style_cites
from apps.verification.index import PacketIndex, PageRecord

HEAD = "Quarry v. Oakes, 123 F.3d 800 (9th Cir. 1997)"
QUARRY = [
    f"{HEAD}\n800\nQUARRY v. OAKES\nA tenant who abandons the premises forfeits the deposit "
    "only after notice.[1]\n____\n1 Notice must be written and sent by certified mail.",
    f"{HEAD}\n801\nThe landlord must mitigate by reletting the premises.[2] Reletting at a lower "
    "rent leaves the tenant liable for the difference.[3]\n____\n2 Mitigation is measured by "
    "the market rent of comparable warehouses.\n3 The difference runs only for the remaining",
    f"{HEAD}\n802\nInterest accrues from the date of each missed installment.[4]\n____\n"
    "term of the lease, never beyond its stated expiry.\n4 Interest is simple, at the statutory "
    "rate of seven percent, not compounded.",
]
# An opinion whose notes carry no calls in its text, and one with no notes at all.
TALLIS = [
    "Tallis v. Brant, 45 F.4th 200 (2d Cir. 2022)\n200\nTALLIS v. BRANT\nA broker earns the "
    "commission when a ready buyer is produced.\n____\n1 Production means a signed offer on "
    "the listed terms.",
    "Tallis v. Brant, 45 F.4th 200 (2d Cir. 2022)\n201\nThe seller's later refusal does not "
    "defeat the commission.\n____\n2 Refusal includes a counteroffer on new terms.",
]
VENN = [
    "Venn v. Ashby, 9 F.4th 50 (1st Cir. 2021)\n50\nVENN v. ASHBY\nA guarantor is released by a "
    "material change to the guaranteed loan made without the guarantor's consent.",
]
# A California opinion, each page one reporter page.
SMITH = [
    "People v. Smith (2019) 7 Cal.5th 100\n100\nPEOPLE v. SMITH\nA search of a vehicle "
    "incident to arrest requires reason to believe evidence of the offense is inside.",
    "People v. Smith (2019) 7 Cal.5th 100\n101\nThe officer's belief that a glovebox held "
    "registration papers was not reason to believe it held narcotics.",
    "People v. Smith (2019) 7 Cal.5th 100\n102\nSuppression is the remedy for the unlawful "
    "search of the glovebox.[3]\n____\n3 The People forfeited the inevitable discovery "
    "argument by raising it first on appeal.",
]


def _pdf_pages(texts: list[str]) -> list[str]:
    """The pages' text as the text layer of a PDF printed with them reads."""
    with pymupdf.open() as pdf:
        for text in texts:
            page = pdf.new_page(width=612, height=792)
            page.insert_text((72, 72), text, fontsize=10)
        data = pdf.tobytes()
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        return [page.get_text() for page in pdf]


def _index(*documents: tuple[str, list[str]]) -> PacketIndex:
    records: list[PageRecord] = []
    for document_id, (name, texts) in enumerate(documents, 1):
        for page, text in enumerate(_pdf_pages(texts), 1):
            position = len(records) + 1
            records.append(
                PageRecord(
                    position,
                    document_id,
                    name,
                    page,
                    (f"OP{position:04d}",),
                    text,
                    "text_layer",
                    None,
                    "public_record",
                )
            )
    return PacketIndex.build(records)


INDEX = _index(
    ("quarry.pdf", QUARRY), ("tallis.pdf", TALLIS), ("venn.pdf", VENN), ("smith.pdf", SMITH)
)


def _cites(text: str) -> list[Finding]:
    claims = extract_claims(text, bates_prefixes=["OP"])
    return [f for f in verify_text(text, claims, INDEX) if f.claim.kind == "case_citation"]


def _cite(text: str, starting: str) -> Finding:
    return next(f for f in _cites(text) if f.claim.text.startswith(starting))


INTEREST = "Interest is simple at seven percent. "
FULL = "Quarry v. Oakes, 123 F.3d 800, {} (9th Cir. 1997)."


# -- footnote pins --------------------------------------------------------------------------


def test_the_note_of_a_pin_is_read_with_its_page() -> None:
    claims = extract_claims(
        "A rule. Quarry v. Oakes, 123 F.3d 800, 813 n.4 (9th Cir. 1997). Id. at 813 nn.4-5. "
        "Also Id. at 802 & n.4.",
        bates_prefixes=[],
    )
    cites = [c.citation for c in claims if c.kind == "case_citation"]

    assert [(c.pin, c.notes) for c in cites if c] == [("813", (4,)), ("813", (4, 5)), ("802", (4,))]


def test_a_footnote_pin_on_its_page_is_supported() -> None:
    assert _cite(INTEREST + FULL.format("802 n.4"), "Quarry").status == "supported"
    mitigation = "Mitigation is measured by market rent. " + FULL.format("801 n.2")
    assert _cite(mitigation, "Quarry").status == "supported"
    chain = INTEREST + FULL.format("802") + " Interest is never compounded. Id. at 802 n.4."
    assert _cite(chain, "Id.").status == "supported"


def test_a_note_continuing_onto_the_next_page_sits_on_both() -> None:
    text = "The difference runs only for the remaining term. " + FULL.format("{}")
    assert _cite(text.format("801 n.3"), "Quarry").status == "supported"
    assert _cite(text.format("801 nn.2-3"), "Quarry").status == "supported"
    expiry = "Liability never runs beyond the stated expiry. " + FULL.format("802 n.3")
    assert _cite(expiry, "Quarry").status == "supported"


def test_a_note_on_another_page_is_a_wrong_pin_naming_its_page() -> None:
    finding = _cite(INTEREST + FULL.format("801 n.4"), "Quarry")

    assert finding.status == "unsupported" and finding.check == "case_pin_note"
    assert "footnote 4 is on page 802" in finding.message
    assert "Interest is simple" in (finding.excerpt or "")


@pytest.mark.parametrize("note", ["n.0", "n.999", "nn.4-999"])
def test_a_note_the_opinion_lacks_is_a_wrong_pin(note: str) -> None:
    finding = _cite(INTEREST + FULL.format(f"802 {note}"), "Quarry")

    assert finding.status == "unsupported" and finding.check == "case_pin_note"
    assert "has no footnote" in finding.message and "1-4" in finding.message


def test_notes_without_calls_are_placed_by_where_their_text_is() -> None:
    full = "Tallis v. Brant, 45 F.4th 200, {} (2d Cir. 2022)."
    text = "A counteroffer on new terms is a refusal. " + full

    assert _cite(text.format("201 n.2"), "Tallis").status == "supported"
    wrong = _cite(text.format("200 n.2"), "Tallis")
    assert wrong.status == "unsupported" and "on page 201" in wrong.message


def test_an_opinion_with_no_notes_gets_a_clear_finding() -> None:
    text = "A guarantor is released. Venn v. Ashby, 9 F.4th 50, 50 n.2 (1st Cir. 2021)."
    finding = _cite(text, "Venn")

    assert finding.status == "needs_review"
    assert "no footnote could be read" in finding.message


def test_a_star_marker_inside_a_number_is_no_page_and_no_crash() -> None:
    # "1*905" and "word*905" are no markers: the star-paged opinion has pages 903-904 only.
    pages = [
        "Ostler v. Reede, 12 Cal.App.5th 903 (2018)\nThe fee was $1*905 under the\n"
        "schedule*905 then in force. *904 A lien attaches on recording.[1]\n____\n"
        "1 Recording means entry in the county index.",
    ]
    index = PacketIndex.build(
        [
            PageRecord(
                1, 1, "ostler.pdf", 1, ("OS0001",), text, "text_layer", None, "public_record"
            )
            for text in _pdf_pages(pages)
        ]
    )

    def pin(text: str) -> Finding:
        claims = extract_claims(text, bates_prefixes=["OS"])
        return next(f for f in verify_text(text, claims, index) if f.claim.kind == "case_citation")

    full = "A lien attaches on recording. (Ostler v. Reede (2018) 12 Cal.App.5th 903, {}.)"
    assert pin(full.format(904)).status == "supported"
    assert pin(full.format("904, fn. 1")).status == "supported"
    outside = pin(full.format(905))
    assert outside.status == "unsupported" and "outside the opinion's pages 903-904" in (
        outside.message
    )


# -- California Style Manual ----------------------------------------------------------------

SEARCH = "A vehicle search incident to arrest needs reason to believe evidence is inside"
GLOVEBOX = "A belief that a glovebox held registration papers is no reason to believe it held"


def test_california_full_cite_id_and_ibid_resolve_to_the_opinion() -> None:
    text = (
        f"{SEARCH}. (People v. Smith (2019) 7 Cal.5th 100, 100.) {GLOVEBOX} narcotics. "
        "(Id. at p. 101.) The officer's belief about registration papers was no reason. (Ibid.)"
    )
    findings = _cites(text)

    assert [f.claim.text for f in findings] == [
        "(People v. Smith (2019) 7 Cal.5th 100, 100",
        "Id. at p. 101",
        "Ibid.",
    ]
    assert [f.status for f in findings] == ["supported"] * 3
    assert findings[2].claim.citation is not None and findings[2].claim.citation.pin == "101"


def test_california_wrong_pins_are_found() -> None:
    text = (
        f"{SEARCH}. (People v. Smith (2019) 7 Cal.5th 100, 100.) {GLOVEBOX} narcotics. "
        "(Id. at p. 102.)"
    )
    wrong = _cite(text, "Id.")
    assert wrong.status == "unsupported" and "page 101 does" in wrong.message
    outside = _cite(f"{SEARCH}. (People v. Smith (2019) 7 Cal.5th 100, 140.)", "(People")
    assert outside.status == "unsupported" and "outside the opinion's pages" in outside.message


def test_california_page_ranges_supra_and_fn() -> None:
    text = (
        f"{SEARCH}. (People v. Smith (2019) 7 Cal.5th 100, 100.) {GLOVEBOX} narcotics. "
        "(Smith, supra, 7 Cal.5th at pp. 100-101.) The People forfeited inevitable discovery "
        "by raising it first on appeal. (Smith, supra, 7 Cal.5th at p. 102, fn. 3.) "
        "Forfeited. (Id. at p. 101, fn. 3.)"
    )
    findings = _cites(text)

    ranged = next(f for f in findings if "pp. 100-101" in f.claim.text)
    noted = next(f for f in findings if "102, fn. 3" in f.claim.text)
    wrong = next(f for f in findings if f.claim.text.startswith("Id."))
    assert ranged.status == "supported"
    assert noted.status == "supported" and noted.claim.citation is not None
    assert noted.claim.citation.notes == (3,)
    assert wrong.status == "unsupported" and "footnote 3 is on page 102" in wrong.message


def test_california_cites_not_in_the_packet_and_bad_pins_get_findings() -> None:
    absent = _cite("A rule. (Vance v. Orr (2023) 87 Cal.App.5th 640, 642.)", "(Vance")
    bare = _cite(f"{SEARCH}. (People v. Smith (2019) 7 Cal.5th 100, 100.) (Id. at p.)", "Id.")
    orphan = _cite("A rule with nothing before it. (Ibid.)", "Ibid")

    assert absent.status == "unsupported" and "not in the evidence" in absent.message
    assert bare.status == "unsupported" and "names no page" in bare.message
    assert orphan.status == "unsupported" and orphan.check == "case_short_form"


def test_ibid_after_a_record_cite_is_that_record() -> None:
    text = "The lease was signed (OP0001). The rent was paid. (Ibid.)"
    assert _cites(text) == []


@pytest.mark.parametrize(
    ("text", "pin", "notes"),
    [
        # a note on the first page
        ("A rule. Quarry v. Oakes, 123 F.3d 800 n.1 (9th Cir. 1997).", "800", (1,)),
        ("A rule. Quarry v. Oakes, 123 F.3d 800, 801 & n.2 (9th Cir. 1997).", "801", (2,)),
        ("A rule. Quarry v. Oakes, 123 F.3d 800, 801 note 2 (9th Cir. 1997).", "801", (2,)),
        # "note" in prose after a citation names no footnote
        ("A rule. Quarry v. Oakes, 123 F.3d 800, note the holding.", None, ()),
    ],
)
def test_what_a_full_citation_pins(text: str, pin: str | None, notes: tuple[int, ...]) -> None:
    claims = [c for c in extract_claims(text, bates_prefixes=[]) if c.kind == "case_citation"]

    assert claims and claims[0].citation is not None
    assert (claims[0].citation.pin, claims[0].citation.notes) == (pin, notes)


def test_a_parallel_citations_volume_is_no_pin() -> None:
    text = "A rule. People v. Hale (1990) 7 Cal.5th 100, 105 P.3d 200."
    first = next(c.citation for c in extract_claims(text, bates_prefixes=[]) if c.citation)

    assert first.page == "100" and first.pin != "105" and first.notes == ()


def test_ibid_keeps_the_note_of_the_cite_before() -> None:
    text = "A rule. (Quarry v. Oakes, 123 F.3d 800, 802 n.4.) Again. (Ibid.)"
    cites = [c.citation for c in extract_claims(text, bates_prefixes=[]) if c.citation]

    assert [(c.pin, c.notes, c.short) for c in cites] == [("802", (4,), False), ("802", (4,), True)]


def test_a_lowercase_id_is_read_here_only_after_a_signal() -> None:
    assert style_cites("The clerk checked the login id. Done.") == []
    found = style_cites("See id. at p. 801, fn. 2.")
    assert [(c.word, c.pin.pages if c.pin else None) for c in found] == [("id.", "801")]


def test_a_note_printed_on_a_later_page_than_its_call_holds_the_proposition() -> None:
    # A star-paged opinion whose notes are printed at the foot of the file page, after the
    # next reporter page's marker: the note belongs to the page of its call.
    pages = [
        "Larch v. Penn, 33 Cal.App.4th 903 (1997)\nA buyer who delays inspection bears the cost\n"
        "of the delay. *904 A seller that cures promptly keeps the price.1 The argument\n"
        "was not raised below. *905 A waiver must be express.\n1 A buyer that accepts partial\n"
        "performance in the face of a clear term forfeits the defense of prior breach.",
    ]
    index = PacketIndex.build(
        [
            PageRecord(1, 1, "larch.pdf", 1, ("LR0001",), text, "text_layer", None, "public_record")
            for text in _pdf_pages(pages)
        ]
    )
    text = (
        "A buyer that accepts partial performance in the face of a clear term forfeits the "
        "defense of prior breach. (Larch v. Penn (1997) 33 Cal.App.4th 903, 904 n.1.) Again. "
        '"[A] buyer that accepts partial performance in the face of a clear term forfeits the '
        'defense." (Larch, supra, 33 Cal.App.4th at p. 904 n.1.) Wrong. (Id. at p. 905 n.1.)'
    )
    claims = extract_claims(text, bates_prefixes=["LR"])
    found = [f for f in verify_text(text, claims, index) if f.claim.kind == "case_citation"]

    assert [f.status for f in found] == ["supported", "supported", "unsupported"]
    assert found[1].claim.citation is not None and found[1].claim.citation.notes == (1,)
    assert "footnote 1 is on page 904" in found[2].message


@pytest.mark.parametrize(
    "text",
    [
        "Smith, 12 " + "A" * 5000 + " x",  # a reporter-like run that never reaches " at "
        "Smith, supra, 12 " + "Ab." * 2000,
        "Smith v. Jones, 1 F.3d 2, 3 " + "C" * 5000 + " 4",  # a parallel-like run
        "Smith, 12 " + "A " * 5000,
        "Id. at " + "1" * 5000 + " n." + "2" * 5000,  # huge numbers
        "A rule. (Ibid.) " * 300,
    ],
)
def test_hostile_runs_are_read_in_linear_time(text: str) -> None:
    started = time.perf_counter()
    found = style_cites(text)
    extract_claims(text, bates_prefixes=[], timeout_s=2.0)

    assert time.perf_counter() - started < 5.0
    assert all(0 <= c.start < c.end <= len(text) for c in found)
