"""Small packets of our own for the verifier's tests: documents of text pages, each page
stamped PREFIX000001 on in packet order, read from a text layer, of client origin."""

from collections.abc import Iterable

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord


def text_index(
    prefix: str, documents: Iterable[tuple[str, list[str]]], *, first: int = 1
) -> PacketIndex:
    """The index of a packet of (file name, pages) documents, in order, stamped from `first`."""
    labelled: list[tuple[str, list[tuple[str, str]]]] = []
    position = first
    for filename, pages in documents:
        labelled.append((filename, []))
        for text in pages:
            labelled[-1][1].append((f"{prefix}{position:06d}", text))
            position += 1
    return labelled_index(labelled)


def labelled_index(documents: Iterable[tuple[str, list[tuple[str, str]]]]) -> PacketIndex:
    """The index of a packet of (file name, [(Bates label, text), ...]) documents, in order."""
    records: list[PageRecord] = []
    for document_id, (filename, pages) in enumerate(documents, 1):
        for number, (label, text) in enumerate(pages, 1):
            position = len(records) + 1
            records.append(
                PageRecord(
                    position,
                    document_id,
                    filename,
                    number,
                    (label,),
                    text,
                    "text_layer",
                    None,
                    "client",
                )
            )
    return PacketIndex.build(records)


def numbered_index(prefix: str, *documents: list[str]) -> PacketIndex:
    """The index of documents named doc-1.pdf, doc-2.pdf, … in order."""
    return text_index(prefix, ((f"doc-{n}.pdf", pages) for n, pages in enumerate(documents, 1)))


def findings_by_claim(text: str, index: PacketIndex, prefix: str) -> dict[str, Finding]:
    """The verifier's findings on `text`, by each claim's text."""
    claims = extract_claims(text, bates_prefixes=[prefix])
    return {f.claim.text: f for f in verify_text(text, claims, index)}


def transcript_page(head: str, number: int, lines: dict[int, str], blank: str = "") -> str:
    """A transcript page: `head` and its page number, then lines 1-25 numbered at the left
    (`lines` by number, the others `blank`)."""
    body = "\n".join(f"{n:2d}   {lines.get(n, blank)}" for n in range(1, 26))
    return f"{head}{' ' * 20}Page {number}\n\n{body}"
