"""Checks of authorities beyond the reporter citation (pure, no Django): statutes against the
frozen packet.

Statute (`statute`): supported when a page of the packet names the same statute: its code,
title and section, matched by the grammar of `apps.verification.claims.statutes` on the page's
text (folded, and on OCR pages read as `index.ocr_read` reads them), so "42 U.S.C. § 1983",
"42 USC 1983", "42 U.S.C.A. §§ 1981, 1983" and "section 1983 of title 42, United States Code"
name one statute, and "§ 1983.5" or "142 U.S.C. § 1983" another. The candidate pages are the
pages holding the section's (and title's) words, from the index's postings: a check reads only
them. Else unsupported, "not in the evidence", which is not a finding that it is fabricated.
Subsections are not compared (a page may name the section and print its subsections lower
down); the finding says when the page does not name the cited subsection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.verification import normalise as nz
from apps.verification.claims import Claim
from apps.verification.claims.statutes import mention_pattern
from apps.verification.index import OCR, PacketIndex, ocr_read

if TYPE_CHECKING:
    from apps.verification.checks import Finding

NOT_IN_EVIDENCE = "not in the evidence (this does not mean it is fabricated)"
MAX_CANDIDATES = 2000  # pages a statute's section and title words both stand on, read in order


def statute(claim: Claim, index: PacketIndex) -> Finding:
    """The finding on a statute claim (see the module docstring)."""
    from apps.verification.checks import Finding

    cite = claim.statute
    if cite is None or not cite.section:
        return Finding(claim, "unsupported", "statute_in_packet", "the statute could not be read")
    pattern = mention_pattern(cite)
    for page_index in _candidates(index, cite.section, cite.title):
        page = index.pages[page_index]
        text = nz.fold(ocr_read(page.text) if page.source == OCR else page.text)
        match = pattern.search(text)
        if match is None:
            continue
        found_pin = next((g for g in ("pin1", "pin2", "pin3") if match.groupdict().get(g)), None)
        message = f"{cite.label} is named on {index.label(page_index)}"
        if cite.pin and (found_pin is None or match.group(found_pin) != cite.pin):
            message += f" (its subsection {cite.pin} is not compared)"
        return Finding(
            claim,
            "supported",
            "statute_in_packet",
            message,
            page=page,
            excerpt=_excerpt(page.text, *match.span()),
            match=match.span(),
        )
    return Finding(claim, "unsupported", "statute_in_packet", f"{cite.label}: {NOT_IN_EVIDENCE}")


def _candidates(index: PacketIndex, section: str, title: str | None) -> list[int]:
    """Pages holding every word of the section and the title, in packet order."""
    terms = [nz.stem(t) for t in nz.token_list(section)]
    if title:
        terms.append(title.lstrip("0") or "0")
    terms = [t for t in dict.fromkeys(terms) if t]
    if not terms:
        return []
    terms.sort(key=index.document_frequency)
    rarest, rest = terms[0], terms[1:]
    pages = [p for p in index.pages_with_term(rarest) if all(t in index.stems[p] for t in rest)]
    return pages[:MAX_CANDIDATES]


def _excerpt(text: str, start: int, end: int, *, around: int = 80) -> str:
    left = max(0, start - around)
    right = min(len(text), end + around)
    return " ".join(text[left:right].split())


__all__ = ["NOT_IN_EVIDENCE", "statute"]
