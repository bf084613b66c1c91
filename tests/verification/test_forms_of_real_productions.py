"""Forms that real productions and drafts take and the verifier must read (issues 20 and 28),
from their rules, on packets of our own:

- a deposition produced as an excerpt (pages 1, 31 and 32 of the transcript) is cited by the
  transcript's page numbers, printed at the edge of a running head ("Deposition of ...
  Page 31"), not by its position in the file;
- a citation sentence in parentheses after its sentence's stop ("... a work order. (TKT-88.)")
  closes that sentence even when another sentence follows, and a shell variable
  ("$EXPORT_DIR") is a name of a thing, not a record cite; a case citation standing so
  ("(Pelican Wharf, 68 Cal.App.5th at 415.)") is the case's, its reporter no code of a thing;
- a quantity with a decimal point ("41.5 hours") is a fact a cited page must carry, as a date
  is;
- a form's number in groups of digits ("HO 00 03 05 11"), a product with its version
  ("ClaimCenter 10") and a serial or hash whose letters stand between digits
  ("4C530001220618117083") standing where a cite belongs are names of things;
- an "Id. at 561" after a record cite whose document has no page 561 is the case cited before
  the record cite (drafters write it so), its pin checked there;
- the words naming the cited opinion's own court ("The Ninth Circuit held ...") are its
  caption's, no fact its pinned page must print;
- an ISO 8601 date and time ("2024-02-11T23:47:05Z") is a date, on a page and in a draft;
- an opinion whose running heads print its page numbers at their edges ("558    914 FEDERAL
  REPORTER, 3d SERIES", "KEYSTONE v. PARDEE    559") and whose first page spells the reporter
  out is read from that first page, each page by the number it prints;
- a citation sentence ("See Ex. 4 at ...") vouches for the sentence before it after that
  sentence's last citation, not for the words another cite already vouched for;
- against a neighbour of the cited page, the draft's words that neither page prints decide
  nothing; against another document's page they still count (common words of time in an
  opinion do not beat a cited checklist).
"""

import pytest

from apps.verification.checks import Finding
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex
from tests.verification.packets import findings_by_claim, text_index

PREFIX = "WLD"


def _lines(lines: dict[int, str]) -> str:
    return "\n".join(f"{n:>2}  {lines.get(n, '')}".rstrip() for n in range(1, 26))


def _deposition_page(page: int, lines: dict[int, str]) -> str:
    head = f"Deposition of Ingrid Solvang{' ' * 30}Page {page}"
    return f"{head}\n{_lines(lines)}\nHollis Court Reporters - (555) 010-2244"


# Pages 1, 31 and 32 of the transcript, produced as three pages of one file.
EXCERPT = [
    _deposition_page(1, {3: "IN THE SUPERIOR COURT", 5: "WELDON FREIGHT v. ARCHER MILLS"}),
    _deposition_page(
        31,
        {
            4: "Q. Who signed off on the pallet count?",
            5: "A. The night supervisor did. I was not there.",
            17: "Q. Did you ever approve, in writing, a credit for",
            18: "the damaged pallets?",
            19: "A. No. Nobody asked me to.",
        },
    ),
    _deposition_page(
        32,
        {
            2: "Q. When did the trailer leave the yard?",
            3: "A. At six in the morning, with the seal intact.",
        },
    ),
]
LOG = [
    "YARD LOG - WELDON FREIGHT\nTrailer 7 left the yard at 06:00 with seal 44821 intact.\n"
    "Pallet count signed by the night supervisor.",
]


def _index() -> PacketIndex:
    return text_index(PREFIX, [("01-yard-log.pdf", LOG), ("02-deposition-solvang.pdf", EXCERPT)])


def _findings(text: str, index: PacketIndex | None = None) -> dict[str, Finding]:
    return findings_by_claim(text, index or _index(), PREFIX)


def test_an_excerpted_deposition_is_cited_by_the_page_numbers_its_running_head_prints() -> None:
    found = _findings(
        "She never approved a credit in writing for the damaged pallets (Solvang Dep. 31:17-19)."
    )["Solvang Dep. 31:17-19"]
    assert found.status == "supported", found.message
    assert "31:17-19" in found.message
    assert found.page is not None and found.page.page_number == 2  # the file's second page

    elsewhere = _findings(
        "The trailer left the yard at six in the morning with its seal intact "
        "(Solvang Dep. 31:4-5)."
    )["Solvang Dep. 31:4-5"]
    assert elsewhere.status == "unsupported"
    assert "32:" in elsewhere.message  # where the testimony is, by the transcript's numbers

    # The file's third page is no page 3 of the transcript: the excerpt has no such page.
    missing = _findings("The trailer left with its seal intact (Solvang Dep. 3:2-3).")
    assert missing["Solvang Dep. 3:2-3"].status == "unsupported"
    assert "no page 3" in missing["Solvang Dep. 3:2-3"].message


@pytest.mark.parametrize(
    ("text", "token"),
    [
        (
            "He said he had opened a ticket. (TKT-88-WLD.) The crew came later. (WLD000001.)",
            "TKT-88-WLD",
        ),
        ("The export is attached (WLD-WO-5517.) and more follows.", None),
        ("The reconstruction is filed herewith ($EXPORT_DIR).", "$EXPORT_DIR"),
        (
            "The reconstruction is filed herewith (${ARCHIVE_ROOT}). The crew came later.",
            "${ARCHIVE_ROOT}",
        ),
    ],
)
def test_what_stands_in_a_citation_sentence_of_its_own_is_read_as_a_cite(
    text: str, token: str | None
) -> None:
    claims = {c.text: c.kind for c in extract_claims(text, bates_prefixes=[PREFIX])}
    if token is None:
        # Words follow the parenthetical inside its sentence: a descriptive one, no cite.
        assert "WLD-WO-5517" not in claims
        return
    assert claims[token] == "not_a_record_cite"
    found = _findings(text)[token]
    assert found.status == "unsupported"


# Two timesheets of one file: the same crew and words, other hours.
TIMESHEETS = [
    "CREW TIMESHEET - WEEK 14\nCrew 3, picker Lena Osk.\nHours submitted: 49.0.\n"
    "Hours after adjustment: 41.5.\nAdjusted per office.",
    "CREW TIMESHEET - WEEK 15\nCrew 3, picker Lena Osk.\nHours submitted: 44.0.\n"
    "Entries edited after the week closed; see the change log.\nThe sheet was edited twice.",
]


def test_a_quantity_with_a_decimal_point_is_a_fact_the_cited_page_must_carry() -> None:
    index = text_index(PREFIX, [("timesheets.pdf", TIMESHEETS)])
    sentence = "Osk's sheet showed 49.0 hours when submitted and 41.5 after the edits ({})."
    right = findings_by_claim(sentence.format("WLD000001"), index, PREFIX)["WLD000001"]
    assert right.status == "supported", right.message

    wrong = findings_by_claim(
        "Osk was paid for only the 41.5 hours of that week (WLD000002).", index, PREFIX
    )["WLD000002"]
    assert wrong.status in ("unsupported", "needs_review"), wrong.message
    assert "WLD000001" in wrong.message


@pytest.mark.parametrize(
    "text",
    [
        "The benefit does not rewrite the exclusion. (Pelican Wharf, 68 Cal.App.5th at 415.) "
        "Nor may the landlord charge it.",
        "The clause controls. (Ostrander v. Kell (2019) 40 Cal.App.5th 1103, 1107.) It is "
        "enforced as written.",
        "Notice was required. (Tessaly Data, 512 F. Supp. 3d at 1045.) None was given.",
    ],
)
def test_a_case_citation_in_a_citation_sentence_of_its_own_is_no_record_cite(text: str) -> None:
    kinds = [c.kind for c in extract_claims(text, bates_prefixes=[PREFIX])]
    assert "not_a_record_cite" not in kinds and "record_cite" not in kinds


@pytest.mark.parametrize(
    "text",
    [
        "Coverage D pays living expenses. (HO 00 03 05 11.) The parties may demand appraisal.",
        "The claim file shows no call before the reinspection (ClaimCenter 10).",
        "The export was read with the vendor's tool. (FileNet 5.5.) Nothing else was used.",
        "The serial is the one in the laptop's registry (4C530001220618117083).",
        "The two hashes matched (9f2c4e7a11b3).",
    ],
)
def test_a_form_number_or_a_product_and_its_version_is_no_record_cite(text: str) -> None:
    kinds = {c.text: c.kind for c in extract_claims(text, bates_prefixes=[PREFIX])}
    assert list(kinds.values()) == ["not_a_record_cite"], kinds


AUDIT_LOG = [
    "AUDIT LOG - NOVALOOP\ntime_utc | user | action | path\n"
    "2024-02-11T23:47:05Z | areyes | READ | /src/pricing/engine_v4.py\n"
    "2024-02-12T00:10:44Z | areyes | ARCHIVE | /tmp/pricing_bak.tar.gz",
]


def test_an_iso_date_and_time_is_a_date_on_the_page_and_in_the_draft() -> None:
    index = text_index(PREFIX, [("audit-log.pdf", AUDIT_LOG)])
    text = (
        "The log records the first READ at 2024-02-11T23:47:05Z, on February 11, 2024 (WLD000001)."
    )
    claims = extract_claims(text, bates_prefixes=[PREFIX])
    assert [c.kind for c in claims].count("not_a_record_cite") == 0
    found = findings_by_claim(text, index, PREFIX)
    assert found["February 11, 2024"].status == "supported", found["February 11, 2024"].message
    assert found["WLD000001"].status == "supported"


def _opinion_page(number: int, body: str) -> str:
    if number % 2 == 0:
        return f"{number}    914 FEDERAL REPORTER, 3d SERIES\n{body}"
    return (
        f"KESTREL SOFTWARE, INC. v. PARR    {number}\nCite as 914 F.3d 558 (9th Cir. 2019)\n{body}"
    )


OPINION = [
    _opinion_page(558, "KESTREL SOFTWARE, INC. v. PARR. The district court enjoined Parr."),
    _opinion_page(559, "Parr copied the repository to a personal drive on a Sunday night."),
    _opinion_page(560, "Use is not required: acquisition by improper means is enough."),
    _opinion_page(561, "A contractual acknowledgment of harm is evidence of irreparable injury."),
]


def _case_finding(text: str, opinion: list[str]) -> Finding:
    """The finding on the one case citation of `text`, against a packet of `opinion`."""
    index = text_index(PREFIX, [("opinion-kestrel.pdf", opinion)])
    (finding,) = [
        f
        for f in findings_by_claim(text, index, PREFIX).values()
        if f.claim.kind == "case_citation"
    ]
    return finding


def test_an_opinion_is_read_by_the_page_numbers_at_the_edges_of_its_running_heads() -> None:
    right = _case_finding(
        "Acquisition by improper means is enough; use is not required. Kestrel Software, "
        "Inc. v. Parr, 914 F.3d 558, 560 (9th Cir. 2019).",
        OPINION,
    )
    assert right.status == "supported", right.message
    past = _case_finding(
        "Harm was shown. Kestrel Software, Inc. v. Parr, 914 F.3d 558, 562 (9th Cir. 2019).",
        OPINION,
    )
    assert past.status == "unsupported" and "558-561" in past.message


EMAILS_AND_REPORT = [
    ("offer.pdf", ["From the CTO: we want you to lead the build of our pricing engine."]),
    (
        "report.pdf",
        ["He mirrored the pricing repository to a build server and packed it into an archive."],
    ),
]


def test_a_citation_sentence_vouches_for_the_words_after_the_last_cite_before_it() -> None:
    index = text_index(PREFIX, EMAILS_AND_REPORT)
    found = findings_by_claim(
        'After an offer to "lead the build of our pricing engine" (WLD000001), he mirrored the '
        "pricing repository to a build server and packed it into an archive. See WLD000002.",
        index,
        PREFIX,
    )
    assert found["WLD000001"].status == "supported", found["WLD000001"].message
    assert found["WLD000002"].status == "supported", found["WLD000002"].message


PHOTO_LOG = [
    "WATER INTRUSION PHOTO LOG (Unit 9)\n"
    "Entry 4 | 01/07/2023 | Rear sales floor | Four active drips; tiles collapsed; tarp "
    "ordered.\nEntry 5 | 01/12/2023 | Exterior | Blue tarp over the northeast corner of the "
    "roof.\nEntry 6 | 02/14/2023 | Rear sales floor | Sagging ceiling tiles; water in buckets.",
    "WATER INTRUSION PHOTO LOG (Unit 9) (continued)\n"
    "Entry 9 | 03/21/2023 | Rear sales floor | Leak recurred under the tarp after an overnight "
    "rain; buckets full.\nEntry 10 | 04/12/2023 | Ceiling grid | Mold spotting on three "
    "ceiling tiles; tiles removed.",
]
# A letter that happens to use the draft's own words ("came back", "later", "appeared",
# "nearly"): rare in the packet, so heavy, but on neither page of the log.
LETTER = [
    "Dear Ms. Pell: The adjuster came back later in the week. Nearly everything that "
    "appeared on the claim form is now settled. Yours, R. Amsel",
]


def test_against_a_neighbour_words_neither_page_prints_decide_nothing() -> None:
    index = text_index(PREFIX, [("photo-log.pdf", PHOTO_LOG), ("letter.pdf", LETTER)])
    sentence = (
        "Even under the tarp, water came back after an overnight rain of nearly two inches, "
        "and mold later appeared on the rear ceiling tiles ({})."
    )
    wrong = findings_by_claim(sentence.format("WLD000001"), index, PREFIX)["WLD000001"]
    assert wrong.status == "unsupported", wrong.message
    assert "WLD000002" in wrong.message
    right = findings_by_claim(sentence.format("WLD000002"), index, PREFIX)["WLD000002"]
    assert right.status == "supported", right.message


CHECKLIST = ["EXIT CHECKLIST\nLast day of employment: 02/16/2024.\nReturned: laptop, badge."]
# Another document that prints the sentence's common words of time, and others that print
# each of its other words once (so that each weighs as a rare word of the packet).
OTHERS = [
    ("opinion.pdf", ["On his last day, and days later, the engineer left the state."]),
    ("roster.pdf", ["Five pickers reported to the orchard."]),
    ("policy.pdf", ["Each employee certified the handbook."]),
    ("memo.pdf", ["Records are kept in writing for a year."]),
]


def test_against_another_documents_page_common_words_of_time_do_not_win() -> None:
    index = text_index(PREFIX, [("checklist.pdf", CHECKLIST), *OTHERS])
    found = findings_by_claim(
        "Five days later, on his last day, he certified in writing that he kept nothing "
        "(WLD000001).",
        index,
        PREFIX,
    )["WLD000001"]
    assert found.status != "unsupported", found.message


AGREEMENT = ["CONFIDENTIALITY AGREEMENT\nParr agrees to keep Kestrel's source code confidential."]


@pytest.mark.parametrize(("pin", "status"), [("561", "supported"), ("559", "unsupported")])
def test_an_id_page_after_a_record_cite_whose_document_lacks_it_is_the_case_cited_before(
    pin: str, status: str
) -> None:
    index = text_index(PREFIX, [("agreement.pdf", AGREEMENT), ("opinion-kestrel.pdf", OPINION)])
    found = findings_by_claim(
        "Use is not required. Kestrel Software, Inc. v. Parr, 914 F.3d 558, 560 (9th Cir. "
        '2019). Parr signed such an agreement (WLD000001). And "A contractual acknowledgment '
        f'of harm is evidence of irreparable injury." Id. at {pin}.',
        index,
        PREFIX,
    )
    finding = found[f"Id. at {pin}"]
    assert finding.status == status, finding.message


# Its caption names its court; its first page and its last both affirm the relief.
OPINION_WITH_CAPTION = [
    _opinion_page(
        558,
        "KESTREL SOFTWARE, INC. v. PARR.\nUnited States Court of Appeals, Ninth Circuit.\n"
        "The district court enjoined Parr, and we affirm that relief.\nParr appeals.\n"
        "We have jurisdiction.\nThe facts follow.",
    ),
    *OPINION[1:3],
    _opinion_page(
        561,
        "The injunction was narrow.\nIt reached only the files.\nThe relief granted was "
        "within the court's discretion, and we affirm it.\nNo more was asked.\nThe end.",
    ),
]


def test_a_sentence_naming_the_cited_opinions_court_asks_no_pinned_page_to_print_it() -> None:
    finding = _case_finding(
        "The Ninth Circuit has affirmed that relief. Kestrel Software, Inc. v. Parr, 914 F.3d "
        "558, 561 (9th Cir. 2019).",
        OPINION_WITH_CAPTION,
    )
    assert finding.status == "supported", finding.message


def test_a_court_lookup_that_fails_leaves_the_pin_judged_on_all_its_words(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from apps.verification import authorities

    def broken(court_text: str | None, court_id: str | None) -> list[dict[str, object]]:
        raise ValueError("courts-db data of an unforeseen shape")

    monkeypatch.setattr(authorities, "_find_courts", broken)
    assert authorities.court_terms("9th Cir.", "ca9") == frozenset()
    finding = _case_finding(
        "Acquisition by improper means is enough; use is not required. Kestrel Software, "
        "Inc. v. Parr, 914 F.3d 558, 560 (9th Cir. 2019).",
        OPINION,
    )
    assert finding.status == "supported", finding.message
    assert "could not be read" in caplog.text
