"""Record cites that name their document (issue 20 req 1): "Ex. N at P" and a document's name or
title with a page ("Subcontract at 3", '"site-log.pdf" at 2'), resolved through the packet's
own documents and checked like a Bates cite. Built from the forms' rules with generated names,
numbers and pages (seeded), never from an evaluation's sentences."""

import random
import string

import pytest

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord

KINDS = ("Subcontract", "Inspection Report", "Change Order", "Site Log", "Lease", "Ledger")
SEEDS = range(6)


def _word(rng: random.Random, size: int = 7) -> str:
    return rng.choice(string.ascii_uppercase) + "".join(
        rng.choice(string.ascii_lowercase) for _ in range(size - 1)
    )


class Packet:
    """A packet of 3-5 documents of 1-4 pages; each page states one fact of invented words
    ("Quorvel ratified the Brandimax ledger"), so that only that page carries it."""

    def __init__(self, seed: int, *, labels: bool = False, prefix: str = "QX") -> None:
        rng = random.Random(seed)  # noqa: S311 (seeded test data)
        self.rng = rng
        kinds = rng.sample(KINDS, rng.randint(3, 5))
        self.documents: list[tuple[str, str, list[str]]] = []  # (file name, title, facts)
        self.pages: list[PageRecord] = []
        self.author = _word(rng)
        position = 0
        for number, kind in enumerate(kinds, 1):
            slug = kind.lower().replace(" ", "-")
            filename = f"Ex_{number}_{slug}.pdf" if labels else f"{rng.randint(10, 99)}-{slug}.pdf"
            facts = []
            for page_number in range(1, rng.randint(1, 4) + 1):
                position += 1
                fact = f"{_word(rng)} ratified the {_word(rng, 9)} {_word(rng, 8).lower()}"
                facts.append(fact)
                head = kind.upper() if page_number == 1 else f"{kind.upper()} (continued)"
                lines = [head]
                if page_number == 1 and number == 1:
                    lines.append(f"From: {self.author}")
                lines += [f"{fact}.", "The parties met and conferred on scheduling."]
                self.pages.append(
                    PageRecord(
                        position,
                        number,
                        filename,
                        page_number,
                        (f"{prefix}{position:07d}",),
                        "\n".join(lines),
                        "text_layer",
                        None,
                        "client",
                    )
                )
            self.documents.append((filename, kind, facts))
        self.index = PacketIndex.build(self.pages)

    def findings(self, text: str) -> list[Finding]:
        claims = extract_claims(text, bates_prefixes=["QX"])
        return verify_text(text, claims, self.index)


def _cite(findings: list[Finding], text: str) -> Finding:
    found = [f for f in findings if f.claim.text == text]
    assert len(found) == 1, [(f.claim.kind, f.claim.text) for f in findings]
    return found[0]


@pytest.mark.parametrize("seed", SEEDS)
def test_an_exhibit_by_its_place_in_the_packet_is_checked_like_a_bates_cite(seed: int) -> None:
    packet = Packet(seed)
    number = packet.rng.randint(1, len(packet.documents))
    facts = packet.documents[number - 1][2]
    page = packet.rng.randint(1, len(facts))
    right = f"Ex. {number} at {page}"
    text = f"{facts[page - 1]} ({right})."
    finding = _cite(packet.findings(text), right)
    assert finding.status == "supported", finding.message
    assert "carry no exhibit labels" in finding.message
    assert finding.page is not None and finding.page.page_number == page


@pytest.mark.parametrize("seed", SEEDS)
def test_an_exhibit_cited_at_a_page_without_the_fact_names_the_page_that_has_it(
    seed: int,
) -> None:
    packet = Packet(seed + 100)
    many = [n for n, d in enumerate(packet.documents, 1) if len(d[2]) > 1]
    if not many:
        pytest.skip("no document of several pages in this packet")
    number = packet.rng.choice(many)
    facts = packet.documents[number - 1][2]
    wrong = f"Exhibit {number}, p. 1"
    text = f"As a citation sentence: {facts[-1]}. {wrong}."
    finding = _cite(packet.findings(text), wrong)
    assert finding.status == "unsupported", finding.message
    assert "does not carry" in finding.message


@pytest.mark.parametrize("seed", SEEDS)
def test_an_exhibit_number_past_the_packet_is_unsupported_with_the_reason(seed: int) -> None:
    packet = Packet(seed + 200)
    count = len(packet.documents)
    cite = f"Ex. {count + packet.rng.randint(1, 9)} at 1"
    finding = _cite(packet.findings(f"{packet.documents[0][2][0]} ({cite})."), cite)
    assert finding.status == "unsupported"
    assert f"has {count} documents" in finding.message


@pytest.mark.parametrize("seed", SEEDS)
def test_exhibit_labels_the_documents_carry_are_the_exhibit_list(seed: int) -> None:
    packet = Packet(seed + 300, labels=True)
    count = len(packet.documents)
    number = packet.rng.randint(1, count)
    fact = packet.documents[number - 1][2][0]
    cite = f"Exh. {number} at 1"
    finding = _cite(packet.findings(f"{fact} ({cite})."), cite)
    assert finding.status == "supported", finding.message
    assert f"Exhibit {number} is Ex_{number}_" in finding.message
    missing = f"Ex. {count + 1} at 1"
    finding = _cite(packet.findings(f"{fact} ({missing})."), missing)
    assert finding.status == "unsupported"
    assert "no document of the packet is labelled" in finding.message


@pytest.mark.parametrize("seed", SEEDS)
def test_a_document_title_with_a_page_is_resolved_and_its_page_checked(seed: int) -> None:
    packet = Packet(seed + 400)
    filename, kind, facts = packet.rng.choice(packet.documents)
    page = packet.rng.randint(1, len(facts))
    right = f"{kind} at {page}"
    text = f"{facts[page - 1]} (See {right})."
    finding = _cite(packet.findings(text), right)
    assert finding.status == "supported", finding.message
    assert filename in finding.message
    past = f"{kind}, p. {len(facts) + packet.rng.randint(1, 5)}"
    finding = _cite(packet.findings(f"{facts[0]} ({past})."), past)
    assert finding.status == "unsupported"
    assert "holds no page" in finding.message


@pytest.mark.parametrize("seed", SEEDS)
def test_a_quoted_file_name_is_part_of_the_cite_not_a_quotation(seed: int) -> None:
    packet = Packet(seed + 500)
    filename, _, facts = packet.rng.choice(packet.documents)
    page = len(facts)
    cite = f'"{filename}" at {page}'
    findings = packet.findings(f"{facts[-1]} ({cite}).")
    assert not [f for f in findings if f.claim.kind == "quote"]
    finding = _cite(findings, cite)
    assert finding.status == "supported", finding.message


@pytest.mark.parametrize("seed", SEEDS)
def test_a_name_and_an_author_on_the_first_page_name_the_document(seed: int) -> None:
    packet = Packet(seed + 600)
    _, kind, facts = packet.documents[0]
    cite = f"{packet.author} {kind} at 1"
    finding = _cite(packet.findings(f"{facts[0]} ({cite})."), cite)
    assert finding.status == "supported", finding.message


@pytest.mark.parametrize("seed", SEEDS)
def test_a_title_that_is_no_packet_documents_is_unsupported(seed: int) -> None:
    packet = Packet(seed + 700)
    rng = packet.rng
    invented = f"{_word(rng)} {rng.choice(('Manifest', 'Appraisal', 'Bulletin'))}"
    cite = f"{invented} at {rng.randint(1, 9)}"
    finding = _cite(packet.findings(f"{packet.documents[0][2][0]} ({cite})."), cite)
    assert finding.status == "unsupported"
    assert finding.check == "record_cite_document"
    assert "is not the name or title of a document of the packet" in finding.message


@pytest.mark.parametrize("seed", SEEDS)
def test_prose_that_mentions_a_document_makes_no_cite(seed: int) -> None:
    packet = Packet(seed + 800)
    _, kind, _ = packet.rng.choice(packet.documents)
    hour = packet.rng.randint(1, 11)
    text = (
        f"The {kind} at {hour} p.m. was signed by both sides. The {kind} at {hour} pages was "
        f"short. We rely on Ex. {hour} generally. The crew (the {kind} at 2) left the site."
    )
    claims = extract_claims(text, bates_prefixes=["QX"])
    assert not [c for c in claims if c.kind == "record_cite"], claims


def test_case_and_record_forms_with_at_are_not_document_names() -> None:
    text = (
        "The rule holds (Smith, 123 F.3d at 456). The same (Id. at 457). It was so "
        "(R. at 5). Again (Compl. at 4). See Rule 56 at 3."
    )
    claims = extract_claims(text, bates_prefixes=["QX"])
    assert not [c for c in claims if c.title is not None or c.exhibit is not None], claims


@pytest.mark.parametrize("seed", SEEDS)
def test_a_paragraph_pin_after_an_exhibit_or_a_title_is_checked_in_that_document(
    seed: int,
) -> None:
    rng = random.Random(seed + 900)  # noqa: S311 (seeded test data)
    facts = [f"{_word(rng)} ratified the {_word(rng, 9)} {_word(rng, 8).lower()}" for _ in range(4)]
    kind = rng.choice(KINDS)
    paragraphs = "\n".join(f"{n}. {fact}." for n, fact in enumerate(facts, 1))
    pages = [
        PageRecord(
            1,
            1,
            "cover.pdf",
            1,
            ("QX0000001",),
            "COVER\nSent by courier.",
            "text_layer",
            None,
            "client",
        ),
        PageRecord(
            2,
            2,
            f"{kind.lower().replace(' ', '_')}.pdf",
            1,
            ("QX0000002",),
            f"{kind.upper()}\n{paragraphs}",
            "text_layer",
            None,
            "client",
        ),
    ]
    index = PacketIndex.build(pages)
    n = rng.randint(1, 4)
    other = rng.choice([k for k in range(1, 5) if k != n])
    for cite in (f"Ex. 2 \u00b6 {n}", f"{kind} \u00b6 {n}"):
        text = f"{facts[n - 1]} ({cite})."
        found = _cite(verify_text(text, extract_claims(text, bates_prefixes=["QX"]), index), cite)
        assert found.status == "supported", found.message
        wrong = cite.replace(f"\u00b6 {n}", f"\u00b6 {other}")
        text = f"{facts[n - 1]} ({wrong})."
        found = _cite(verify_text(text, extract_claims(text, bates_prefixes=["QX"]), index), wrong)
        assert found.status == "unsupported", found.message
        assert f"\u00b6 {n} has it" in found.message


@pytest.mark.parametrize("seed", SEEDS)
def test_a_bates_page_cited_under_an_exhibit_must_be_in_that_exhibit(seed: int) -> None:
    labelled = Packet(seed + 1000, labels=True)
    first = labelled.pages[0]
    fact = labelled.documents[0][2][0]
    right, wrong = f"Ex. 1 at {first.bates[0]}", f"Ex. 2 at {first.bates[0]}"
    assert _cite(labelled.findings(f"{fact} ({right})."), right).status == "supported"
    finding = _cite(labelled.findings(f"{fact} ({wrong})."), wrong)
    assert finding.status == "unsupported"
    assert finding.check == "record_cite_exhibit"
    assert first.filename in finding.message
    # Read from the packet's order, the exhibit's number is no label of the document: the
    # page stands, and the finding says where it is.
    unlabelled = Packet(seed + 1000)
    page = unlabelled.pages[0]
    wrong = f"Ex. 2 at {page.bates[0]}"
    finding = _cite(unlabelled.findings(f"{unlabelled.documents[0][2][0]} ({wrong})."), wrong)
    assert finding.status == "supported", finding.message
    assert f"the cited page is in {page.filename}" in finding.message
