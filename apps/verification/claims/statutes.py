"""Statutes and regulations: one grammar for a draft's citations and a page's mentions.

A statute is its code, its title (for codes numbered by title: "42 U.S.C."), and its section;
those three, normalised, are what two mentions must share to name the same statute:

- a code is compared by its key, the lowercased letters and digits of its name ("U.S.C.",
  "USC" and "U. S. C." are "usc"), and each code of reporters-db's law list also by the keys
  of its variations ("U.S. Code", "United States Code", "U.S.C.A." are the U.S. Code);
- a title is its number; a section is compared as written, lowercased, without the
  subsections in brackets after it ("1983(a)(1)" is section 1983, pin "(a)(1)"), and never
  as a prefix of a longer one ("§ 1983" is not "§ 19830" or "§ 1983.5").

eyecite finds a draft's statutes; `titled_statutes` finds the forms of the titled codes that
eyecite does not read ("42 USC 1983", "section 1983 of title 42 of the United States Code",
"title 42, United States Code, section 1983"). `mention_pattern` is the pattern of one
statute's mentions on a page in all of those forms, and in lists ("§§ 1981, 1983").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from apps.verification.claims.base import StatuteCite

# A section number: digits first, then letters, digits, dots, colons and inner hyphens
# ("1983", "17.46", "240.10b-5", "78j"); subsections follow in brackets.
SECTION = r"\d[\dA-Za-z]*(?:[.:\-\u2010\u2011\u2013](?=[\dA-Za-z])[\dA-Za-z]+)*"
SUBSECTIONS = r"(?:\([A-Za-z0-9]{1,5}\))*"
_MARKER = r"(?:\u00a7\u00a7?|[Ss]ec(?:tion)?s?\.?|SECTIONS?|[Ss]\.)"
_END = r"(?![\dA-Za-z]|\.\d)"


def code_key(name: str) -> str:
    """The comparable form of a code's name: "U.S.C." -> "usc"."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


@functools.lru_cache(maxsize=1)
def _laws() -> dict[str, tuple[str, tuple[str, ...], bool]]:
    """code key -> (the code's name, every written form of it, whether it has titles), from
    reporters-db's law list; each variation's key leads to its code."""
    try:
        from reporters_db import LAWS
    except ImportError:  # pragma: no cover - reporters-db is a pinned dependency
        return {}
    table: dict[str, tuple[str, tuple[str, ...], bool]] = {}
    for name, entries in LAWS.items():
        forms = {name}
        titled = False
        for entry in entries:
            forms.update(entry.get("variations", []))
            titled = titled or any(
                r.startswith(("(?P<title>", "(?P<chapter>")) for r in entry.get("regexes", [])
            )
        row = (name, tuple(sorted(forms, key=len, reverse=True)), titled)
        for form in forms:
            table.setdefault(code_key(form), row)
    return table


def canonical_code(name: str) -> str:
    """The name reporters-db gives the code written `name` ("USC" -> "U.S.C."), or `name`."""
    row = _laws().get(code_key(name))
    return row[0] if row else name


def code_forms(name: str) -> tuple[str, ...]:
    """Every written form of the code named `name` (its variations), longest first."""
    row = _laws().get(code_key(name))
    forms = set(row[1]) if row else set()
    forms.add(name)
    return tuple(sorted(forms, key=len, reverse=True))


def _loose(form: str) -> str:
    """A code's written form as a pattern: its words in order, with or without the dots and
    spaces between them ("U.S.C." reads "USC", "U. S. C.", "U.S.C")."""
    parts = re.findall(r"[A-Za-z0-9]+|&", form)
    return r"[\s.]*".join(re.escape(p) for p in parts) + (r"\.?" if form.endswith(".") else "")


def _alternation(forms: tuple[str, ...]) -> str:
    return "(?:" + "|".join(_loose(f) for f in forms if re.search(r"[A-Za-z]", f)) + ")"


@functools.lru_cache(maxsize=1)
def _titled_pattern() -> re.Pattern[str]:
    titled = sorted(
        {form for _, forms, has_titles in _laws().values() if has_titles for form in forms},
        key=len,
        reverse=True,
    )
    code = _alternation(tuple(titled)) if titled else "(?!)"
    # A draft's citation is written as codes are ("U.S.C.", "USC", "Title 42"): case matters,
    # so that words in lowercase prose ("5 pa code") are never read as a code.
    return re.compile(_forms(r"\d{1,3}", code, SECTION))


def _forms(title: str, code: str, section: str, *, lists: bool = False) -> str:
    """The three written forms of a titled code's section (named groups: title, code, section,
    pin; one set per form, suffixed 1-3)."""
    listed = r"(?:" + SECTION + SUBSECTIONS + r"\s*(?:,|,?\s+and|,?\s+or|&)\s*){0,8}"
    before = listed if lists else ""
    return (
        rf"(?<![\w.])(?P<title1>{title})\s*,?\s+(?P<code1>{code})(?![A-Za-z])\s*,?\s*"
        rf"(?:{_MARKER}\s*)?{before}(?P<section1>{section}){_END}(?P<pin1>{SUBSECTIONS})"
        rf"|(?<![\w.]){_MARKER}\s*{before}(?P<section2>{section}){_END}(?P<pin2>{SUBSECTIONS})"
        rf"\s+of\s+[Tt]itle\s+(?P<title2>{title})\s*,?\s*(?:of\s+the\s+)?(?P<code2>{code})"
        rf"(?![A-Za-z])"
        rf"|(?<![\w.])[Tt]itle\s+(?P<title3>{title})\s*,?\s*(?:of\s+the\s+)?(?P<code3>{code})"
        rf"(?![A-Za-z])\s*,?\s*{_MARKER}\s*{before}(?P<section3>{section}){_END}"
        rf"(?P<pin3>{SUBSECTIONS})"
    )


def _groups(match: re.Match[str]) -> tuple[str, str, str, str]:
    for n in "123":
        if match.group(f"section{n}") is not None:
            return (
                match.group(f"title{n}"),
                match.group(f"code{n}"),
                match.group(f"section{n}"),
                match.group(f"pin{n}") or "",
            )
    raise ValueError("no form matched")  # pragma: no cover - the pattern has three forms


def titled_statutes(text: str) -> Iterator[tuple[int, int, StatuteCite]]:
    """Citations of titled codes in `text`, in any of the forms above, with their spans."""
    for match in _titled_pattern().finditer(text):
        title, code, section, pin = _groups(match)
        cite = StatuteCite(
            code=canonical_code(re.sub(r"\s+", " ", code).strip()),
            title=title,
            section=section,
            pin=pin or None,
            year=None,
        )
        yield match.start(), match.end(), cite


# After a "§§" list's first section: ", 1985", " and 1988", ", or 1986(a)", " & 1988".
_LISTED = re.compile(
    r"\s*(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s*&\s*)(?P<section>"
    + SECTION
    + ")"
    + _END
    + r"(?P<pin>"
    + SUBSECTIONS
    + ")"
)
_SEVERAL = re.compile(r"\u00a7\u00a7|\b(?:[Ss]ections|SECTIONS|[Ss]ecs\.)")
MAX_LISTED = 8  # further sections read after the first of one "§§" list


def listed_sections(
    text: str, start: int, end: int, cite: StatuteCite
) -> list[tuple[int, int, StatuteCite]]:
    """The further sections of a citation that marks several ("42 U.S.C. §§ 1983 and 1988",
    "Cal. Civ. Code §§ 1572, 1573": Bluebook rule 3.3(b) and the California Style Manual
    write "§§" before a list of sections of one code), `text[start:end]` being the citation
    of the first: each the same code and title at its own section, with its span (the
    section number and its subsections). Nothing where the citation marks one section."""
    if not _SEVERAL.search(text, start, end):
        return []
    found: list[tuple[int, int, StatuteCite]] = []
    at = end
    while len(found) < MAX_LISTED:
        match = _LISTED.match(text, at)
        if match is None:
            break
        section = StatuteCite(
            cite.code,
            cite.title,
            match.group("section"),
            match.group("pin") or None,
            cite.year,
        )
        found.append((match.start("section"), match.end(), section))
        at = match.end()
    return found


def from_eyecite(cite: Any) -> StatuteCite:
    """A StatuteCite from eyecite's FullLawCitation."""
    groups = getattr(cite, "groups", {}) or {}
    reporter = re.sub(r"\s+", " ", groups.get("reporter") or "").strip()
    subject = re.sub(r"\s+", " ", groups.get("subject") or "").strip()
    code = reporter if not subject or subject in reporter else f"{reporter} {subject}"
    meta = cite.metadata
    year = getattr(meta, "year", None)
    pin = (getattr(meta, "pin_cite", None) or "").strip()
    return StatuteCite(
        code=canonical_code(code),
        title=groups.get("title") or groups.get("chapter") or None,
        section=groups.get("section") or "",
        pin=pin if re.fullmatch(SUBSECTIONS, pin) and pin else None,
        year=int(year) if year and str(year).isdigit() else None,
    )


def mention_pattern(cite: StatuteCite) -> re.Pattern[str]:
    """Where a page names the statute `cite` (its title, code and section; see the module)."""
    code = _alternation(code_forms(cite.code))
    section = re.escape(cite.section)
    if cite.title:
        title = re.escape(cite.title.lstrip("0") or cite.title)
        return re.compile(_forms(rf"0*{title}", code, section, lists=True), re.IGNORECASE)
    listed = r"(?:" + SECTION + SUBSECTIONS + r"\s*(?:,|,?\s+and|,?\s+or|&)\s*){0,8}"
    return re.compile(
        rf"(?<![\w.])(?P<code1>{code})(?![A-Za-z])\s*,?\s*(?:{_MARKER}\s*)?{listed}"
        rf"(?P<section1>{section}){_END}",
        re.IGNORECASE,
    )


__all__ = [
    "canonical_code",
    "code_forms",
    "code_key",
    "from_eyecite",
    "mention_pattern",
    "titled_statutes",
]
