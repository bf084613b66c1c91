"""A court's filed record read by its filing headers (pure, no Django).

Every page a court's electronic filing system files prints a header at its head or foot: "Case
1:23-cv-00417 ECF No. 9-4, PageID.512 Filed 06/02/23 Page 14 of 40" (the Sixth Circuit's
district courts, which cite the record by PageID), "Case 1:23-cv-02817-ELR Document 45-3
Filed 09/12/23 Page 7 of 22" (cited "Doc. 45-3 at 7" in the Eleventh Circuit). A packet that
holds filed pages can be cited so; these functions find the pages such a cite names, read
once an index (`PacketIndex.derived`)."""

import re
from collections.abc import Iterator

from apps.verification.index import PacketIndex
from apps.verification.paragraphs import range_end

PAGE_ID = "PageID."
EDGE_CHARS = 400  # a page's head and foot, where its filing header stands
MAX_PAGE_IDS = 200  # pages one cite may name ("PageID.100-300")

_PAGE_ID_HEADER = re.compile(
    r"(?:ECF[ \t]+No\.[ \t]*(?P<entry>\d{1,5}(?:-\d{1,3})?)[, \t]+)?PageID[ \t]*(?:\.|#:?)[ \t]*"
    r"(?P<id>\d{1,7})\b"
)
_ENTRY_HEADER = re.compile(
    r"(?:Document|ECF[ \t]+No\.)[ \t]*(?P<entry>\d{1,5}(?:-\d{1,3})?)\b.*?\bPage[ \t]+"
    r"(?P<page>\d{1,4})[ \t]+of[ \t]+(?P<of>\d{1,4})"
)
# The Board's docket (TTABVUE) prints its entry and the entry's page on each page it files:
# "Opposition No. 91287654   14 TTABVUE 6", cited "14 TTABVUE 6".
_BOARD_HEADER = re.compile(r"(?<![\w])(?P<entry>\d{1,4})[ \t]+TTABVUE[ \t]+(?P<page>\d{1,4})\b")
# New York's e-filing (NYSCEF) stamps each page with its document's number and no page count
# ("NYSCEF DOC. NO. 45   RECEIVED NYSCEF: 03/15/2024"): a document's pages are counted in order.
_NYSCEF_HEADER = re.compile(r"NYSCEF[ \t]+DOC\.[ \t]+NO\.[ \t]*(?P<entry>\d{1,5})\b")
CITED_ENTRY = re.compile(r"ECF[ \t]+No\.[ \t]*(?P<entry>\d{1,5}(?:-\d{1,3})?)")
# A cite of an entry by the page its header counts ("Doc. 45-3 at 7", "ECF No. 45-3 at 7").
ENTRY_CITE = re.compile(
    r"(?:NYSCEF[ \t]+)?(?:Doc|Dkt|ECF)\.?[ \t]*(?:No\.[ \t]*)?(?P<entry>\d{1,5}(?:-\d{1,3})?)"
    r",?[ \t]+at[ \t]+"
)


def page_ids(index: PacketIndex) -> dict[int, tuple[int, str]]:
    """PageID: (the packet page printing it in its filing header, its docket entry or "")."""
    return index.derived("filed page ids", lambda: _read_page_ids(index))


def entry_pages(index: PacketIndex) -> dict[str, dict[int, int]]:
    """A docket entry: {its page as its filing header counts it: the packet page}."""
    return index.derived("filed entries", lambda: _read_entries(index))


def _headers(index: PacketIndex, pattern: re.Pattern[str]) -> Iterator[tuple[int, re.Match[str]]]:
    """Each page's filing header (at its head, else its foot), with the page's position."""
    for position, page in enumerate(index.pages):
        for edge in (page.text[:EDGE_CHARS], page.text[-EDGE_CHARS:]):
            header = pattern.search(edge)
            if header is not None:
                yield position, header
                break


def _read_page_ids(index: PacketIndex) -> dict[int, tuple[int, str]]:
    found: dict[int, tuple[int, str]] = {}
    for position, header in _headers(index, _PAGE_ID_HEADER):
        found.setdefault(int(header.group("id")), (position, header.group("entry") or ""))
    return found


def _read_entries(index: PacketIndex) -> dict[str, dict[int, int]]:
    found: dict[str, dict[int, int]] = {}
    for pattern in (_ENTRY_HEADER, _BOARD_HEADER):
        for position, header in _headers(index, pattern):
            pages = found.setdefault(header.group("entry"), {})
            pages.setdefault(int(header.group("page")), position)
    counted: dict[str, dict[int, int]] = {}
    for position, header in _headers(index, _NYSCEF_HEADER):
        pages = counted.setdefault(header.group("entry"), {})
        pages[len(pages) + 1] = position
    for entry, pages in counted.items():
        found.setdefault(entry, pages)  # (a header that counts its pages says more)
    return found


def without_headers(text: str) -> str:
    """`text` without the lines that print a filing header (a page's part that is only its
    header holds nothing of what the page carries)."""
    patterns = (_ENTRY_HEADER, _BOARD_HEADER, _PAGE_ID_HEADER, _NYSCEF_HEADER)
    return "\n".join(
        line for line in text.splitlines() if not any(p.search(line) for p in patterns)
    )


def cited_entry(text: str) -> str | None:
    """The docket entry a cite pinned by its page names ("Doc. 45-3 at 7": "45-3"; "14
    TTABVUE 6": "14"), or None."""
    cited = ENTRY_CITE.match(text) or _BOARD_HEADER.match(text)
    return cited.group("entry") if cited is not None else None


def page_id_numbers(written: str) -> list[int] | None:
    """ "639-40" -> [639, 640]; "511,513" -> [511, 513]; None for a range too long or reversed."""
    numbers: list[int] = []
    for part in written.split(","):
        first, _, last = part.partition("-") if "-" in part else part.partition("\u2013")
        start = int(first)
        end = range_end(first, last) if last else start  # "639-40": 640
        if end < start or end - start >= MAX_PAGE_IDS:
            return None
        numbers.extend(range(start, end + 1))
    return numbers


def cite_pages(
    index: PacketIndex, text: str, pins: tuple[str, ...], numbers: list[int]
) -> list[int]:
    """The packet pages a cite of the filed record names ("ECF No. 9-4, PageID.271", "Doc.
    45-3 at 7"; `numbers` its page pins), or none."""
    written = next((pin for pin in pins if pin.startswith(PAGE_ID)), None)
    if written is not None:
        ids = page_id_numbers(written[len(PAGE_ID) :]) or []
        printed = page_ids(index)
        return list(dict.fromkeys(printed[n][0] for n in ids if n in printed))
    cited = cited_entry(text)
    if cited is None or not numbers:
        return []
    entry = entry_pages(index).get(cited, {})
    return list(dict.fromkeys(entry[n] for n in numbers if n in entry))
