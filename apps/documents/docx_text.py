"""The text of a Word document as a person can see it, read from the package's XML parts.

What is read (everything Word or LibreOffice can show on a page or in a pane):

- the body (word/document.xml) with its tables (a row's cells separated by tabs), content
  controls (w:sdt), text boxes (w:txbxContent, also the VML copy in an mc:Fallback when it
  differs from the mc:Choice), fields' results, hyperlinks, equations (m:t) and tracked
  insertions (w:ins: shown until they are rejected);
- every header, footer, footnote, endnote and comment part (headers first, footers last, each
  distinct text once);
- hidden text (w:vanish) too: one click in Word shows it, so it is read like the rest.

What is not: deleted text of tracked changes (w:del, w:delText, w:moveFrom: shown struck
through, gone once accepted), field codes (w:instrText) and the glossary of building blocks.

Budgets, so a hostile part cannot hang or exhaust the worker: the parts' XML is already bounded
by LEXWEB_MAX_OFFICE_XML_BYTES (formats.check_xml_size); a DOCTYPE (entity bombs such as the
billion laughs) is refused, as Word never writes one; elements nested deeper than MAX_DEPTH are
refused (libxml2's own default limit, which python-docx and LibreOffice parse under); and at
most MAX_TEXT_CHARS characters are kept, the rest reported as truncated (the page is then
flagged for review). expat parses as a stream, without recursion, reading no external entity.
"""

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from xml.parsers import expat

from lexweb.errors import DomainError

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
MATH = "http://schemas.openxmlformats.org/officeDocument/2006/math"

MAX_DEPTH = 256
MAX_TEXT_CHARS = 5_000_000

DAMAGED = "The Word document is damaged and cannot be read; open and save it again in Word."
HAS_DTD = (
    "The Word document's XML declares a DTD (entities), which Word never writes; it may be "
    "an entity bomb and was not read."
)
TOO_DEEP = (
    f"The Word document's XML is nested more than {MAX_DEPTH} levels deep, which Word never "
    "writes; it was not read."
)

# Elements whose text is not shown: deleted text of tracked changes and field codes.
_UNSEEN = {f"{W} del", f"{W} moveFrom", f"{W} delText", f"{W} instrText"}
_TEXT = {f"{W} t", f"{MATH} t"}
_BREAKS = {f"{W} br": "\n", f"{W} cr": "\n", f"{W} tab": "\t", f"{W} noBreakHyphen": "-"}
_PART = re.compile(r"word/(header|footer)(\d*)\.xml")


@dataclass(frozen=True)
class WordText:
    text: str
    # More than MAX_TEXT_CHARS characters: the rest was not read (the page needs review).
    truncated: bool


class _Reader:
    """One part's text, collected by expat callbacks into `out` (shared between parts so the
    character budget covers the whole document)."""

    def __init__(self, budget: list[int]) -> None:
        self.out: list[str] = []
        self.budget = budget  # [characters left], shared by every part
        self.truncated = False
        self.depth = 0
        self.unseen = 0  # open elements whose text is not shown
        self.in_text = 0
        self.stack: list[str] = []
        # mc:AlternateContent: where each open Choice / Fallback began in `out`, and the text
        # of the last Choice closed (a Fallback that repeats it is dropped).
        self.marks: list[int] = []
        self.choices: list[str] = []

    def parse(self, part: IO[bytes]) -> None:
        parser = expat.ParserCreate(namespace_separator=" ")
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.buffer_text = True
        parser.StartDoctypeDeclHandler = self._doctype
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._chars
        parser.ParseFile(part)

    def _doctype(self, *_args: object) -> None:
        raise DomainError(HAS_DTD)

    def _emit(self, text: str) -> None:
        if self.unseen or not text:
            return
        left = self.budget[0]
        if len(text) > left:
            text = text[:left]
            self.truncated = True
        self.budget[0] = left - len(text)
        if text:
            self.out.append(text)

    def _ends_with(self, suffix: str) -> bool:
        return bool(self.out) and self.out[-1].endswith(suffix)

    def _replace_end(self, old: str, new: str) -> None:
        if self._ends_with(old):
            self.out[-1] = self.out[-1][: -len(old)] + new

    def _start(self, name: str, _attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise DomainError(TOO_DEEP)
        parent = self.stack[-1] if self.stack else ""
        self.stack.append(name)
        if name in _UNSEEN:
            self.unseen += 1
        elif name in _TEXT:
            self.in_text += 1
        elif name in _BREAKS and parent == f"{W} r":  # w:tab in w:tabs is a tab stop
            self._emit(_BREAKS[name])
        elif name == f"{W} txbxContent" and self.out and not self._ends_with("\n"):
            self._emit("\n")
        elif name in (f"{MC} Choice", f"{MC} Fallback"):
            self.marks.append(len(self.out))

    def _end(self, name: str) -> None:
        self.depth -= 1
        self.stack.pop()
        if name in _UNSEEN:
            self.unseen -= 1
        elif name in _TEXT:
            self.in_text -= 1
        elif name == f"{W} p":
            self._emit("\n")
        elif name == f"{W} tc":
            self._replace_end("\n", "\t")
        elif name == f"{W} tr":
            self._replace_end("\t", "\n")
        elif name == f"{MC} Choice":
            self.choices.append("".join(self.out[self.marks.pop() :]))
        elif name == f"{MC} Fallback":
            mark = self.marks.pop()
            shown = " ".join("".join(self.out[mark:]).split())
            if any(shown == " ".join(choice.split()) for choice in self.choices):
                del self.out[mark:]
        elif name == f"{MC} AlternateContent":
            self.choices.clear()

    def _chars(self, data: str) -> None:
        if self.in_text:
            self._emit(data)


def word_text(path: Path) -> WordText:
    """The text of the Word document at `path` (see the module's docstring). Raises
    DomainError with the reason for a damaged or hostile file."""
    budget = [MAX_TEXT_CHARS]
    truncated = False
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "word/document.xml" not in names:
                raise DomainError(DAMAGED)
            headers = sorted((n for n in names if _is(n, "header")), key=_number)
            footers = sorted((n for n in names if _is(n, "footer")), key=_number)
            notes = [
                n
                for n in ("word/footnotes.xml", "word/endnotes.xml", "word/comments.xml")
                if n in names
            ]
            texts: dict[str, str] = {}
            for name in [*headers, "word/document.xml", *notes, *footers]:
                reader = _Reader(budget)
                with archive.open(name) as part:
                    reader.parse(part)
                texts[name] = "".join(reader.out).strip()
                truncated = truncated or reader.truncated
    except DomainError:
        raise
    except Exception:  # zipfile, expat and decoding errors alike
        raise DomainError(DAMAGED) from None
    blocks: list[str] = []
    for name in [*headers, "word/document.xml", *notes, *footers]:
        text = texts[name]
        if text and (name == "word/document.xml" or text not in blocks):
            blocks.append(text)
    if truncated:
        blocks.append(f"[Only the first {MAX_TEXT_CHARS:,} characters of this document were read.]")
    return WordText("\n\n".join(blocks).replace("\x00", ""), truncated)


def _is(name: str, kind: str) -> bool:
    match = _PART.fullmatch(name)
    return match is not None and match.group(1) == kind


def _number(name: str) -> int:
    match = _PART.fullmatch(name)
    return int(match.group(2) or 0) if match else 0
