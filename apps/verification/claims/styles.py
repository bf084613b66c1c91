"""Pin cites and short forms that eyecite does not read, by the written rules of the styles
lawyers file in (pure, no Django).

Bluebook (rule 3.2(b)): a footnote pin follows the page, "813 n.4", "813 nn.4-5",
"813 & n.4"; a note on the first page is "800 n.4". eyecite reads the citation and drops the
note (and with it the whole pin).

California Style Manual (sections 1:1-1:4): the year stands in parentheses before the volume
("(2023) 87 Cal.App.5th 640, 642", which eyecite reads); a pin is "at p. 641" or
"at pp. 640-641"; a footnote is "at p. 641, fn. 3"; "Id." names the source just cited at
another page ("(Id. at p. 641.)"), "Ibid." the same source at the same page ("(Ibid.)");
a short form is "(Smith, supra, 7 Cal.5th at p. 105)" or "Smith, 7 Cal.5th at pp. 104-105".
eyecite reads neither "Id. at p." nor "Ibid." nor a short form with "pp.".

`pin_tail` reads the pin written after a citation eyecite found (and where eyecite read none,
or read it without its note, gives it); `style_cites` finds the Id./Ibid. and short forms
eyecite missed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_NOTES = 20  # "nn.4-999" is read up to this many notes

_PAGES = r"(?P<pages>\d{1,5}(?!\d)(?:[ \t]*[-\u2013][ \t]*\d{1,5}(?!\d))?)"
_NOTE = (
    r"(?P<note>[ \t]*(?:,|&)?[ \t]*(?:(?P<nk>nn?\.|fns?\.)|(?P<nw>(?:foot)?notes?)(?=[ \t]*\d))"
    r"[ \t]*(?P<notes>\d{1,4}(?:[ \t]*(?:[-\u2013,&]|and)[ \t]*\d{1,4})*)?)"
)
_AT = r"(?P<at>[ \t]+at[ \t]+(?:(?P<pp>pp?\.)[ \t]*)?(?:" + _PAGES + r")?)"
# After a full citation's first page: ", 813", ", 813 n.4", " n.4" (a note on the first page),
# ", at p. 642" is no form of either style, but is read the same.
# A number followed by a reporter is a parallel citation's volume, not a pin.
_NOT_PARALLEL = r"(?![ \t]+(?:[A-Z][\w.']*[ \t]){1,5}\d)"
_FULL_TAIL = re.compile(
    r"(?:,[ \t]*(?:at[ \t]+)?(?:(?P<pp>pp?\.)[ \t]*)?"
    + _PAGES
    + _NOT_PARALLEL
    + r")?"
    + _NOTE
    + "?"
)
# After Id., Ibid. or a short form: " at 813 n.4", " at p. 641, fn. 3", ", fn. 3".
# After supra, a volume and reporter may come first ("Smith, supra, 7 Cal.5th at p. 105").
_REPORTER_FIRST = (
    r"(?P<first>[ \t]*,?[ \t]*\d{1,4}[ \t]+[A-Z][\w.]*(?:[ \t][A-Z0-9][\w.]*){0,4}?"
    r"(?=[ \t]+at[ \t]))?"
)
_SUPRA_BEFORE = re.compile(r"supra,?[ \t]*$")
_SHORT_TAIL = re.compile(_REPORTER_FIRST + _AT + _NOTE + "?|" + _NOTE.replace("(?P<", "(?P<x"))


@dataclass(frozen=True)
class Pin:
    end: int  # where the pin ends in the text
    pages: str | None  # "813", "640-641"; None: none written
    notes: tuple[int, ...]  # the footnotes named
    note_text: str | None  # the note as written ("n.4"), None when no note is named
    bare: bool  # "at p." or "n." with no number: the pin names nothing


def _notes(written: str | None) -> tuple[int, ...]:
    if not written:
        return ()
    numbers: list[int] = []
    for match in re.finditer(r"(\d{1,4})(?:[ \t]*[-\u2013][ \t]*(\d{1,4}))?", written):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        for n in range(first, max(first, min(last, first + MAX_NOTES - 1)) + 1):
            if n not in numbers:
                numbers.append(n)
    return tuple(numbers[:MAX_NOTES])


def pin_tail(text: str, at: int, *, full: bool) -> Pin | None:
    """The pin written at `at` in `text`, just after a full citation's first page (`full`) or
    after Id., Ibid., supra or a short form's reporter; None when there is none."""
    match = (_FULL_TAIL if full else _SHORT_TAIL).match(text, at)
    if match is None or match.end() == at:
        return None
    groups = {k.lstrip("x"): v for k, v in match.groupdict().items() if v is not None}
    if groups.get("first") and not _SUPRA_BEFORE.search(text, max(0, at - 12), at):
        # "Cotterell, 315 Ga. at 209, 892 S.E.2d at 645": after a pin, a volume and reporter
        # begin a parallel citation with its own pin (only after supra do they lead the pin).
        return None
    pages = re.sub(r"[ \t]+", "", groups["pages"]) if groups.get("pages") else None
    note_kind = groups.get("nk") or groups.get("nw")
    notes = _notes(groups.get("notes"))
    bare = (bool(groups.get("at")) and pages is None) or (bool(note_kind) and not notes)
    end = match.end()
    if not pages and not note_kind and not bare:
        return None
    note_text = f"{note_kind}{groups.get('notes') or ''}".strip() if note_kind else None
    return Pin(end, pages, notes, note_text, bare)


def split_pin(written: str) -> Pin:
    """A pin as eyecite read it ("102, fn. 3", "p. 105") split into its pages and notes."""
    note = re.search(_NOTE.replace("(?P<", "(?P<x"), written)
    head = written[: note.start()] if note else written
    pages = re.search(r"\d{1,5}(?:[ \t]*[-\u2013][ \t]*\d{1,5})?", head)
    kind = (note.group("xnk") or note.group("xnw")) if note else None
    numbers = _notes(note.group("xnotes")) if note else ()
    return Pin(
        len(written),
        re.sub(r"[ \t]+", "", pages.group()) if pages else None,
        numbers,
        f"{kind}{note.group('xnotes') or ''}" if note else None,
        pages is None and not note,
    )


# "Id." or "Ibid." standing as a citation, with its pin.
# Lowercase only after a signal ("see id. at 5"): "the login id." is no citation.
_ID = re.compile(
    r"(?<![\w.])(?P<word>Id\.|Ibid\.?|(?:(?<=\b[Ss]ee\s)|(?<=\b[Aa]lso\s)|(?<=\b[Cc]f\.\s)"
    r"|(?<=\b[Aa]ccord\s))(?:id\.|ibid\.?))(?![\w])"
)
_EMPHASIS_CLOSE = re.compile(r"[*_]{1,2}(?=\s)")
# A short form eyecite does not read: "Smith, 7 Cal.5th at pp. 104-105", "Smith, supra,
# 7 Cal.5th at p. 105, fn. 3".
_SHORT = re.compile(
    r"(?<![\w.])(?P<name>[A-Z][\w'\u2019.-]*(?:\s+v\.\s+[A-Z][\w'\u2019.-]*)?),\s+"
    r"(?:supra,\s+)?(?P<volume>\d{1,4})\s+(?P<reporter>[A-Z][\w.]*(?:\s[A-Z0-9][\w.]*){0,4}?)"
    r"(?=\s+at\s)"
)


# A short form pinned by paragraph, as public-domain citations are ("Kerrigan at ¶ 19",
# "Wendt Hydraulics at ¶¶ 21-22"): a name, then the paragraphs.
_SHORT_PARAGRAPH = re.compile(
    r"(?<![\w.])(?P<name>[A-Z][\w'\u2019.&-]*(?:[ \t]+[A-Z][\w'\u2019.&-]*){0,2}),?[ \t]+at[ \t]+"
    r"(?P<pin>\u00b6\u00b6?[ \t]*\d{1,4}(?:[ \t]*[-\u2013][ \t]*\d{1,4})?)(?!\d)"
)


@dataclass(frozen=True)
class StyleCite:
    start: int
    end: int
    word: str  # "Id.", "Ibid.", or "" for a short form with a name
    name: str | None
    volume: str
    reporter: str
    pin: Pin | None


def style_cites(text: str) -> list[StyleCite]:
    """Id./Ibid. with or without a pin, and named short forms with "at p."/"at pp.", in
    order; the caller drops those eyecite already read."""
    found: list[StyleCite] = []
    for match in _ID.finditer(text):
        # (its emphasis closed before the pin: "(*Id.* at p. 1090.)")
        emphasis = _EMPHASIS_CLOSE.match(text, match.end())
        pin = pin_tail(text, emphasis.end() if emphasis else match.end(), full=False)
        end = pin.end if pin else match.end()
        word = match.group("word")
        found.append(StyleCite(match.start(), end, word, None, "", "", pin))
    for match in _SHORT.finditer(text):
        pin = pin_tail(text, match.end(), full=False)
        if pin is None:
            continue
        found.append(
            StyleCite(
                match.start(),
                pin.end,
                "",
                match.group("name"),
                match.group("volume"),
                re.sub(r"\s+", " ", match.group("reporter")),
                pin,
            )
        )
    for match in _SHORT_PARAGRAPH.finditer(text):
        numbers = re.sub(r"[^\d\u2013-]", "", match.group("pin")).replace("\u2013", "-")
        pin = Pin(match.end(), numbers, (), None, False)
        found.append(StyleCite(match.start(), match.end(), "", match.group("name"), "", "", pin))
    found.sort(key=lambda c: c.start)
    return found


def is_ibid(word: str) -> bool:
    return word.lower().startswith("ibid")


__all__ = ["Pin", "StyleCite", "is_ibid", "pin_tail", "split_pin", "style_cites"]
