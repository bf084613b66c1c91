"""Record cites that name a document rather than a Bates page (pure, no Django): "Ex. 3 at 2"
and a document's name or title with a page ("Subcontract at 3", "Voss Letter, p. 2",
'"site-log.pdf" at 2'). Issue 20 req 1.

Which document a cite names is read from the packet's own documents, never from a list of
words:

1. **Exhibits.** A document carries its exhibit label when its file name starts with it
   ("Ex_3_Subcontract.pdf", "Exhibit B - Letter.pdf") or its first page prints it alone on a
   line at the top or the foot (an exhibit slip sheet or sticker: "EXHIBIT 3",
   "PLAINTIFF'S EXHIBIT 3"). When any document of the packet carries one, those labels are
   the exhibit list, and "Ex. N" must be one of them. When none does, the exhibits are the
   packet's documents in its order (a filing's exhibits are attached in order): "Ex. 3" (or
   "Ex. C") is its third document, and the finding says it read it so. A binder's tab ("Tab
   7") is read as a name first (a document printing "[AR Tab 7]"), then as such an exhibit
   (`tab_label`).
2. **Names and titles.** A document's names are the words of its file name (its extension and
   leading order numbers aside) and of its title line (the first line of its first page, when
   short), letters and digits apart ("fy2022" is "fy" and "2022"). A cited name names the
   documents whose names hold each of its words (a word matches one that starts with it, so
   "Letter" matches "letters", a number of three digits or more one that ends with it, so the
   "'482 patent" is "us-patent-11206482"; "the", "of" and the like are left out); when none
   does, the documents whose names hold some of its words and whose first page holds the
   others, a number never only there ("Voss Letter": a letter whose first page names Voss;
   "Report No. 2" is not "report-3" whose first page prints a 2). A name the draft defines
   ('Interim Report No. 2 ("IR-2")') is read as the words it defines (checks.context). One
   document: resolved; several: which one is for a person to say; none: the cite names no
   document of the packet.
3. **The page.** The pin is a page of that document (the file's page number, as "Compl. at 3"
   is read); a page the packet does not hold is unsupported, naming how many it has.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from apps.verification.claims.base import TITLE_SMALL_WORDS, series_label
from apps.verification.index import PacketIndex

TITLE_WORDS = 12  # a first line longer than this is text, not a title
# Letters and digits apart: "10-K" and "form-10k-fy2022.pdf" share "10", "k" and "2022".
_WORD = re.compile(r"[a-z]+|[0-9]+")
_NUMBER_LABELS = frozenset({"no", "nos", "nr", "num", "number"})
_FILE_LABEL = re.compile(
    r"^(?:(?:pl(?:aintiff)?|def(?:endant)?|joint)s?['\u2019]?s?[\s._-]*)?"
    r"ex(?:h(?:ibit)?)?\.?[\s._-]*(?P<n>\d{1,4}|[a-z]{1,2})(?=[\s._-]|$)",
    re.IGNORECASE,
)
_SLIP_LABEL = re.compile(
    # (alone on its line, or closing a head line after a column gap: "Docket No. 14382-22
    # EXHIBIT 25-P", the Tax Court's stipulated exhibits with their party's letter; or opening
    # one before a column gap: "PLAINTIFF'S TRIAL EXHIBIT 7      Civil Action No. ...")
    r"^\s*(?:\S[^\n]*?[ \t]{3,})?(?:(?:PLAINTIFF|DEFENDANT|JOINT|GOVERNMENT)S?['\u2019]?S?\s+)?"
    r"(?:TRIAL\s+)?EXHIBIT\s+(?P<n>\d{1,4}(?:-[A-Z]{1,2})?|[A-Z]{1,2})\s*(?:[ \t]{3,}\S[^\n]*)?$",
    re.IGNORECASE,
)
# An exhibit label ending a file's name after what the document is: "04-emails-trial-ex-7.pdf"
_FILE_LABEL_END = re.compile(
    r"[\s._-](?:trial[\s._-]*)?ex(?:h(?:ibit)?)?[\s._-]*(?P<n>\d{1,4})$", re.IGNORECASE
)
# A party's exhibit label ("CX-12", "PX 7", "DTX-3"): a file name starting with it
# ("cx12-weekly-status-reports.pdf"), or a head or foot line reading "Exhibit CX-12 ...".
# (after the packet's order number, if any: "01-jx1-employment-agreement.pdf")
_PARTY = r"(?P<party>(?:[pdjgcr]|[pdj]t)x)[\s._-]?(?P<n>\d{1,4})"
_PARTY_FILE_LABEL = re.compile(rf"^(?:\d{{1,3}}[\s._-]+)?{_PARTY}(?=[\s._-]|$)", re.IGNORECASE)
# ... or ending it after what the document is: "03-capital-call-notice-jx14.pdf"
_PARTY_FILE_LABEL_END = re.compile(rf"[\s._-]{_PARTY}$", re.IGNORECASE)
# A party's series before "exh" in a file's name ("05-gc-exh-7-termination-letter.pdf",
# "10-jt-exh-1-joint-stipulation.pdf"), or on its first page's sticker ("GC EXHIBIT 7").
_SERIES_FILE_LABEL = re.compile(
    r"^(?:\d{1,3}[\s._-]+)?(?P<series>gc|cp|jt|r)[\s._-]+exh?(?:ibit)?[\s._-]*(?P<n>\d{1,4})"
    r"(?=[\s._-]|$)",
    re.IGNORECASE,
)
_SERIES_SLIP_LABEL = re.compile(
    r"^\s*(?P<series>GC|CP|JT\.?|R)\s+EXH(?:IBIT|\.)?\s+(?P<n>\d{1,4})\b", re.IGNORECASE
)
_PARTY_SLIP_LABEL = re.compile(
    r"^\s*(?:EXHIBIT\s+)?(?P<party>(?:[PDJGCR]|[PDJ]T)X)[-\s]?(?P<n>\d{1,4})\b",
    re.IGNORECASE,
)
_PARTY_LABEL = re.compile(r"(?:GC|CP|[PDJGCR]|[PDJ]T)X\d{1,4}")
EDGE_LINES = 3  # lines at the top and the foot of a first page where a label may stand


@dataclass(frozen=True)
class Document:
    id: int
    filename: str
    pages: tuple[int, ...]  # page indexes, in page order
    names: frozenset[str]  # words of its file name and title line
    label: str | None  # its exhibit label, normalised ("3", "B"), when it carries one


@dataclass(frozen=True)
class Catalogue:
    documents: tuple[Document, ...]  # in the packet's order

    @property
    def labelled(self) -> bool:
        return any(d.label for d in self.documents)


@dataclass(frozen=True)
class Resolved:
    """Where a cite's document is: `document` (None when it names none, `reason` saying why;
    `ambiguous` when several fit) and how it was read (`how`, for the finding)."""

    document: Document | None
    how: str
    reason: str = ""
    ambiguous: bool = False


def normal_label(label: str) -> str:
    """ "03" -> "3", "b" -> "B", "025-p" -> "25-P" (a Tax Court exhibit and its party)."""
    number, dash, party = label.partition("-")
    if dash and number.isdigit() and party.isalpha():
        return f"{int(number)}-{party.upper()}"
    return str(int(label)) if label.isdigit() else label.upper()


def _ordinal(label: str) -> int | None:
    """The place in order an exhibit number or letter names: "3" -> 3, "C" -> 3, "AA" -> 27."""
    if label.isdigit():
        return int(label)
    if not label.isalpha():
        return None
    place = 0
    for char in label.upper():
        place = place * 26 + ord(char) - ord("A") + 1
    return place


def _words(text: str) -> list[str]:
    # (a possessive's "s" is no word of a name: "Renfro's email" is "renfro email")
    text = re.sub(r"['\u2019]s\b", "", text.lower())
    return [normal_label(w) if w.isdigit() else w for w in _WORD.findall(text)]


def _label_of(filename: str, first_page: str) -> str | None:
    stem = filename.rsplit(".", 1)[0]
    match = _FILE_LABEL.match(stem)
    if match is not None:
        return normal_label(match.group("n"))
    party = _PARTY_FILE_LABEL.match(stem)
    if party is not None:
        return f"{party.group('party').upper()}{int(party.group('n'))}"
    series = _SERIES_FILE_LABEL.match(stem)
    if series is not None:
        return series_label(series.group("series"), series.group("n"))
    ending = _FILE_LABEL_END.search(stem)
    if ending is not None:
        return normal_label(ending.group("n"))
    party_end = _PARTY_FILE_LABEL_END.search(stem)
    if party_end is not None:
        return f"{party_end.group('party').upper()}{int(party_end.group('n'))}"
    lines = [ln for ln in first_page.splitlines() if ln.strip()]
    for line in [*lines[:EDGE_LINES], *lines[-EDGE_LINES:]]:
        sticker = _SERIES_SLIP_LABEL.match(line)
        if sticker is not None:
            return series_label(sticker.group("series"), sticker.group("n"))
        slip = _SLIP_LABEL.match(line)
        if slip is not None:
            return normal_label(slip.group("n"))
        party = _PARTY_SLIP_LABEL.match(line)
        if party is not None and (
            line.lstrip().upper().startswith("EXHIBIT") or len(line.split()) == 1
        ):
            return f"{party.group('party').upper()}{int(party.group('n'))}"
    return None


def catalogue(index: PacketIndex) -> Catalogue:
    """The packet's documents in its order, with their names and exhibit labels."""
    first_position: dict[int, int] = {}
    for i, page in enumerate(index.pages):
        first_position.setdefault(page.document_id, i)
    documents = []
    for document_id in sorted(first_position, key=first_position.__getitem__):
        pages = index.document_pages(document_id)
        first = index.pages[pages[0]]
        stem = first.filename.rsplit(".", 1)[0]
        names = set(_words(_FILE_LABEL.sub("", stem)))
        title = next((ln for ln in first.text.splitlines() if ln.strip()), "")
        if len(title.split()) <= TITLE_WORDS:
            names.update(_words(title))
        documents.append(
            Document(
                document_id,
                first.filename,
                tuple(pages),
                frozenset(names),
                _label_of(first.filename, first.text),
            )
        )
    return Catalogue(tuple(documents))


def exhibit(cat: Catalogue, label: str) -> Resolved:
    """The document "Ex. `label`" names (see the module's docstring)."""
    wanted = normal_label(label)
    if _PARTY_LABEL.fullmatch(wanted) and all(d.label != wanted for d in cat.documents):
        # A party's exhibit ("PX-12") that no document is labelled as: the packet's order
        # says nothing of it, so a person finds it; unless the packet labels that party's
        # series ("GCX1"-"GCX7"), which then has no such exhibit.
        series = wanted.rstrip("0123456789")
        kin = [d.label for d in cat.documents if d.label and d.label.rstrip("0123456789") == series]
        if kin:
            return Resolved(
                None,
                "",
                f"no document of the packet is labelled {wanted} (its {series}: {', '.join(kin)})",
            )
        return Resolved(None, "", f"no document of the packet is labelled {wanted}", ambiguous=True)
    if cat.labelled:
        found = [d for d in cat.documents if d.label == wanted]
        if len(found) == 1:
            return Resolved(found[0], f"Exhibit {wanted} is {found[0].filename}")
        labels = ", ".join(d.label for d in cat.documents if d.label)
        if found:
            names = ", ".join(d.filename for d in found)
            return Resolved(
                None,
                "",
                f"{len(found)} documents are labelled Exhibit {wanted}: {names}",
                ambiguous=True,
            )
        return Resolved(
            None,
            "",
            f"no document of the packet is labelled Exhibit {wanted} (its exhibits: {labels})",
        )
    place = _ordinal(wanted)
    count = len(cat.documents)
    if place is None or not 1 <= place <= count:
        return Resolved(
            None,
            "",
            f"the packet numbers no exhibits and has {count} documents, so Exhibit {wanted} is "
            "none of them",
        )
    document = cat.documents[place - 1]
    return Resolved(
        document,
        f"Exhibit {wanted} read as the packet's document {place} of {count}, "
        f"{document.filename} (the packet's documents carry no exhibit labels)",
    )


_TAB_TITLE = re.compile(r"Tab (?P<n>[A-Z]{1,2}|\d{1,4})")


def tab_label(title: str) -> str | None:
    """The exhibit label of a binder's tab cited by its tab alone ("Tab 7" -> "7"), else None:
    a tab no document prints or is named by is the binder's document in that place, as an
    exhibit of a packet that labels none is."""
    match = _TAB_TITLE.fullmatch(title)
    return match.group("n") if match else None


def titled(cat: Catalogue, index: PacketIndex, name: str, *, names_only: bool = False) -> Resolved:
    """The document a cite names by `name` (see the module's docstring); with `names_only`,
    only a document whose names hold every word of it (not its first page)."""
    stem = name.rsplit(".", 1)[0] if re.search(r"\.[A-Za-z]\w{1,4}$", name) else name
    read = _words(stem)
    words = [
        w
        for k, w in enumerate(read)
        if w not in TITLE_SMALL_WORDS
        # "Change Order No. 7" is "change-order-007.pdf": a number's label is no word of it.
        and not (w in _NUMBER_LABELS and k + 1 < len(read) and read[k + 1].isdigit())
    ]
    if not words:
        return Resolved(None, "", f"{name!r} names no document")

    # Words written as abbreviations ("Rpt.", "Stmt.", "Dep't"): a longer word with their
    # letters in order, from its first ("Rpt." is "report"; Bluebook T6 abbreviates so).
    abbreviated = {
        w.lower() for w in re.findall(r"([A-Za-z]{2,6})(?:\.|['\u2019][a-z]{1,2}\b)", stem)
    }

    def held(word: str, names: frozenset[str]) -> bool:
        # A word matches one that starts with it; a number of three digits or more one that
        # ends with it (the "'482 patent" is No. 11,206,482).
        return any(
            n == word
            or (len(word) >= 3 and (n.endswith(word) if word.isdigit() else n.startswith(word)))
            or (word in abbreviated and _abbreviates(word, n))
            for n in names
        )

    found = [d for d in cat.documents if all(held(w, d.names) for w in words)]
    how = "by its name"
    if not found and not names_only:
        # Some words in its name, the others on its first page ("Voss Letter").
        found = []
        for d in cat.documents:
            missing = [w for w in words if not held(w, d.names)]
            if len(missing) == len(words) or any(w.isdigit() for w in missing):
                continue  # a number it is named by is in its name ("report-2"), not its page
            page_words = frozenset(_words(index.pages[d.pages[0]].text))
            if all(held(w, page_words) for w in missing):
                found.append(d)
        how = "by its name and its first page"
    if len(found) == 1:
        return Resolved(found[0], f"{name!r} is {found[0].filename} ({how})")
    if found:
        names = ", ".join(d.filename for d in found[:4])
        return Resolved(None, "", f"{name!r} fits {len(found)} documents ({names})", ambiguous=True)
    return Resolved(
        None,
        "",
        f"{name!r} is not the name or title of a document of the packet "
        f"({len(cat.documents)} documents)",
    )


def _abbreviates(short: str, word: str) -> bool:
    """Whether `short` abbreviates `word`: its first letter, then its other letters in order
    ("rpt" of "report", "stmt" of "statement", "dept" of "department")."""
    if len(short) < 2 or len(word) <= len(short) or short[0] != word[0]:
        return False
    rest = iter(word[1:])
    return all(letter in rest for letter in short[1:])


def pinned_pages(index: PacketIndex, document: Document, numbers: list[int]) -> list[int]:
    """The document's pages that `numbers` name (its file's page numbers), in page order."""
    return [p for p in document.pages if index.pages[p].page_number in numbers]


# A page's own number printed at its head or foot: "34", "- 34 -", "Page 34", "Page 34 of 60",
# "34 | Proxy Statement" (a filing's, a proxy's or a report's pages, produced as an excerpt).
_PRINTED = re.compile(
    r"^[ \t]*(?:(?:page|p\.)[ \t]*)?[-\u2013\u2014]?[ \t]*(?P<n>\d{1,4})[ \t]*[-\u2013\u2014]?"
    r"(?:[ \t]*of[ \t]+\d{1,4})?(?:[ \t]+\|[^\n]{0,60})?[ \t]*$",
    re.IGNORECASE,
)
EDGE_LINES_READ = 3  # lines at the head and at the foot of a page where its number stands


def printed_pages(index: PacketIndex, pages: Sequence[int], numbers: list[int]) -> list[int] | None:
    """The pages of `pages` that print `numbers` as their own page numbers (at a head or a
    foot), in order: a document cited by the page numbers it prints ("Proxy at 58" for an
    excerpt of five pages). None unless each number is printed by exactly one page."""
    found: dict[int, list[int]] = {}
    by_page = [(page, _printed_numbers(index.pages[page].text)) for page in pages]
    # A first page printing no number before pages numbered from m on (a journal article's
    # first page, its number in the range of its citation line) is page m - 1.
    for k in range(len(by_page) - 1):
        page, printed = by_page[k]
        following = by_page[k + 1][1]
        if not printed and len(following) == 1:
            by_page[k] = (page, {next(iter(following)) - 1})
    for page, printed in by_page:
        for number in printed & set(numbers):
            found.setdefault(number, []).append(page)
    if any(len(found.get(n, ())) != 1 for n in numbers):
        return None
    return [found[n][0] for n in numbers]


def bates_numbered_pages(
    index: PacketIndex, pages: Sequence[int], numbers: list[int], cited: str
) -> list[int] | None:
    """The pages of `pages` whose Bates numbers are `numbers` without their prefix, where the
    cite as `cited` writes that prefix ("AR Tab 14 at 1210" for the tab's page stamped AR1210:
    an administrative record's pages are cited by their numbers; "Ex. 3 at 41" names no
    prefix, and its 41 is a page). None unless each number is the number of exactly one page."""
    found: dict[int, list[int]] = {}
    wanted = set(numbers)
    for page in pages:
        for label in index.pages[page].bates:
            digits = _BATES_DIGITS.search(label)
            prefix = label[: digits.start()].strip(" -_") if digits is not None else ""
            if (
                digits is not None
                and int(digits.group(1)) in wanted
                and prefix
                and re.search(rf"(?<![\w]){re.escape(prefix)}(?![A-Za-z])", cited)
            ):
                found.setdefault(int(digits.group(1)), []).append(page)
    if any(len(set(found.get(n, ()))) != 1 for n in numbers):
        return None
    return [found[n][0] for n in numbers]


# A Bates label's number: its last run of digits before a page suffix (".0002").
_BATES_DIGITS = re.compile(r"(\d+)(?:\.\d{1,6})?$")


# A running head's page number at its edge, apart from its words by a column gap ("C.N.
# Okafor et al. / J. Process Flow Instrum. 29 (2016) 212-216      213", "214      C.N. ...").
_PRINTED_AT_EDGE = re.compile(r"^[ \t]*(?P<n>\d{1,4})[ \t]{2,}\S|\S[ \t]{2,}(?P<m>\d{1,4})[ \t]*$")


def _printed_numbers(text: str) -> set[int]:
    """The page numbers a page prints at its head or foot."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    edges = [*lines[:EDGE_LINES_READ], *lines[-EDGE_LINES_READ:]]
    printed = {int(m.group("n")) for line in edges if (m := _PRINTED.match(line))}
    if not printed:
        for line in lines[:EDGE_LINES_READ]:
            edge = _PRINTED_AT_EDGE.search(line)
            if edge is not None:
                printed.add(int(edge.group("n") or edge.group("m")))
    return printed
