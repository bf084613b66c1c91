"""Case citations with eyecite: guarded, time-limited, resolved; a plain reporter pattern for
what the time limit leaves unread (never resolved)."""

from __future__ import annotations

import bisect
import functools
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from apps.verification.claims import statutes, styles
from apps.verification.claims.base import CaseCite, Spans, StatuteCite
from apps.verification.claims.record import RecordCite, pinned_by_record, record_id

logger = logging.getLogger(__name__)

EMPHASIS = frozenset("*_`")

_CHUNK = 20_000


@dataclass
class _Found:
    start: int
    end: int
    cite: Any


def _chunks(text: str) -> list[tuple[int, int]]:
    chunks: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + _CHUNK)
        if end < len(text):
            cut = text.rfind("\n\n", start + _CHUNK // 2, end)
            if cut == -1:
                cut = text.rfind("\n", start + _CHUNK // 2, end)
            if cut == -1:
                cut = text.rfind(" ", start + _CHUNK // 2, end)
            end = cut + 1 if cut != -1 else end
        chunks.append((start, end))
        start = end
    return chunks


def _shift(cite: Any, offset: int) -> None:
    for name in ("span_start", "span_end", "full_span_start", "full_span_end"):
        value = getattr(cite, name, None)
        if value is not None:
            setattr(cite, name, value + offset)
    meta = getattr(cite, "metadata", None)
    for name in ("pin_cite_span_start", "pin_cite_span_end"):
        value = getattr(meta, name, None)
        if value is not None:
            setattr(meta, name, value + offset)


_LAW_TAIL = re.compile(
    rf"{statutes.SUBSECTIONS}(?:\s*\((?:[^()\n]{{0,40}}\s)?(?:1[6-9]|20)\d\d\))?"
)


_NAME_LEAD = re.compile(r"\b(?:In re|Ex parte|(?:In the )?Matter of)\s+$", re.IGNORECASE)


_PARTY = r"(?:[A-Z][\w.&'\u2019-]*,?\s+(?:(?:of|and|the|for|&)\s+)?){1,8}"
_PARTIES_BEFORE = re.compile(rf"(?<![\w.,])\s?{_PARTY}v\.\s+{_PARTY}$")


def _claim_span(text: str, cite: Any, offset: int) -> tuple[int, int]:
    from eyecite.models import FullCaseCitation, FullLawCitation, ShortCaseCitation, SupraCitation

    start, end = cite.span()
    if isinstance(cite, FullLawCitation):
        # The subsections and the year's parenthetical ("§ 1332(a)(1) (2018)") belong to it;
        # another parenthetical after it does not.
        tail = _LAW_TAIL.match(text, end - offset)
        return start, end + (tail.end() - (end - offset) if tail else 0)
    if isinstance(cite, FullCaseCitation | ShortCaseCitation | SupraCitation):
        full_start, full_end = cite.full_span()
        end = max(end, full_end)
        if isinstance(cite, FullCaseCitation):
            start = min(start, full_start)
            # "In re", "Ex parte", "Matter of" begin the case's name, which eyecite starts after.
            lead = _NAME_LEAD.search(text, max(0, start - offset - 12), start - offset)
            if lead is not None:
                start = lead.start() + offset
            # An adversary proceeding's caption before the bankruptcy case's name, "Feeney v.
            # Ostrowski Lumber, Inc. (In re Larchmont Cabinet Co.), 648 B.R. 407": the whole is
            # the citation's name, none of it a proposition.
            if text.startswith("(", start - offset):
                parties = _PARTIES_BEFORE.search(text, max(0, start - offset - 160), start - offset)
                if parties is not None:
                    start = parties.start() + offset
            # What eyecite took into the name before a colon or a closed parenthetical ("Exhibit
            # J: Matter of Verhoeven, ...", "(OBJ 00452-00454) and Matter of Trowbridge, ..."):
            # no part of it.
            lead = _NAME_CUT.match(text, start - offset, cite.span()[0] - offset)
            if lead is not None:
                start = lead.end() + offset
            # ... or before a sentence's end and the word opening the next ("... at Heron Bay.
            # Under Castellanos v. Windward Isles ...").
            ended = _sentence_end_in_name(text, start - offset, cite.span()[0] - offset)
            if ended is not None:
                start = ended + offset
        else:
            # eyecite's full span of a short form can reach back over the previous sentence:
            # start at the antecedent name written just before it, if any.
            guess = _written_name(cite)
            if guess:
                at = text.rfind(guess, max(0, start - offset - len(guess) - 8), start - offset)
                if at != -1:
                    start = at + offset
    return start, end


def _memoise_court_lookup() -> None:
    """eyecite reads each parenthetical's court by comparing it with every court of courts-db
    (about 2,800 regular-expression substitutions, ~60 ms a citation): the same strings come
    back citation after citation, and the answer depends on the string alone, so it is kept.
    Same function, same answers; installed once."""
    try:
        from eyecite import helpers
    except ImportError:  # pragma: no cover - eyecite is a pinned dependency
        return
    lookup = getattr(helpers, "get_court_by_paren", None)
    if lookup is None or hasattr(lookup, "cache_info"):
        return
    helpers.get_court_by_paren = functools.lru_cache(maxsize=4096)(lookup)


@functools.cache
def prepare_eyecite() -> None:
    """eyecite's import and its first call (which builds its tokenizer): 1.5-3 s once per
    process, more on a loaded machine. Done before a draft's time limit is taken, so the
    first draft a process reads is read like every other, never cut at the limit by it."""
    try:
        from eyecite import get_citations
    except ImportError:  # pragma: no cover - eyecite is a pinned dependency
        return
    _memoise_court_lookup()
    get_citations("Roe v. Doe, 1 U.S. 1, 2 (1790).")


def _eyecite(text: str, deadline: float) -> tuple[list[_Found], int]:
    """Case-citation and statute candidates in `text` and how far eyecite read before the
    deadline."""
    try:
        from eyecite import get_citations
        from eyecite.models import (
            FullCaseCitation,
            FullLawCitation,
            IdCitation,
            ShortCaseCitation,
            SupraCitation,
        )
    except ImportError:  # pragma: no cover - eyecite is a pinned dependency
        logger.warning("eyecite is not installed; case citations read by the fallback pattern")
        return [], 0
    _memoise_court_lookup()
    kinds = (FullCaseCitation, FullLawCitation, ShortCaseCitation, SupraCitation, IdCitation)
    found: list[_Found] = []
    for start, end in _chunks(text):
        if time.monotonic() >= deadline:
            return found, start
        chunk = text[start:end]
        if not chunk.strip():
            continue
        try:
            cites = get_citations(_BRACKETS.sub(_as_parentheses, chunk))
        except Exception:
            logger.exception("eyecite failed on characters %d-%d of a draft", start, end)
            continue
        for cite in cites:
            if not isinstance(cite, kinds):
                continue
            if isinstance(cite, FullLawCitation) and "number" in (cite.groups or {}):
                continue  # "U.S. Patent No. 11,206,482": a patent, a document, no statute
            if isinstance(cite, FullCaseCitation) and _SECTION_AFTER.match(chunk, cite.span()[1]):
                continue  # "940 CMR 3.08": a regulation's section; a reporter's page is whole
            a, b = _claim_span(chunk, cite, 0)
            _shift(cite, start)
            found.append(_Found(a + start, b + start, cite))
    return found, len(text)


# The New York Official Reports' court and year in brackets ("178 AD3d 1021, 1023 [3d Dept
# 2019]", "36 NY3d 388 [2021]"), where the Bluebook writes parentheses: eyecite reads them as
# it reads the Bluebook's (as parentheses of the same length, so every span stays the draft's),
# instead of taking the next parenthetical it meets for the citation's year.
_BRACKETS = re.compile(r"\[(?=[^\[\]\n]{0,60}\b(?:1[6-9]|20)\d\d\])([^\[\]\n]{0,64})\]")


def _as_parentheses(match: re.Match[str]) -> str:
    return f"({match.group(1)})"


# A decimal section after what would be a reporter's page: a code's or a regulation's section
# ("940 CMR 3.08", "105 CMR 130.020"), never a case (reporters number their pages whole).
_SECTION_AFTER = re.compile(r"\.\d")

# What stands between a case's citation and that of its subsequent history (Bluebook 10.7):
# ", cert. denied, ", ", aff'd, ", ", rev'd in part on other grounds, ", "..., aff'd sub nom.
# Doe v. Roe, ". The history is no authority of its own: the citation is the case's.
_HISTORY = re.compile(
    r"\s*,?\s*(?:cert\.\s+(?:denied|granted|dismissed)|aff['\u2019]d|rev['\u2019]d|vacated|"
    r"modified|reh['\u2019]g(?:\s+en\s+banc)?\s+denied|appeal\s+dismissed)"
    r"(?:\s+in\s+part)?(?:\s+on\s+other\s+grounds)?(?:\s+(?:mem\.|per\s+curiam))?,?"
    r"(?:\s+sub\s+nom\.\s+[^,;()]{1,120},)?\s*"
)


@functools.lru_cache(maxsize=1)
def _reporter_pattern() -> re.Pattern[str]:
    try:
        from reporters_db import REPORTERS
    except ImportError:  # pragma: no cover
        names: list[str] = []
    else:
        names = sorted(
            {
                name
                for key, reporters in REPORTERS.items()
                for reporter in reporters
                for name in [key, *reporter.get("editions", {}), *reporter.get("variations", {})]
            },
            key=len,
            reverse=True,
        )
    alternation = "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in names if n) or "$^"
    return re.compile(
        rf"(?<![\w])(?P<volume>\d{{1,4}})\s+(?P<reporter>{alternation})\s+(?P<page>\d{{1,5}})"
        rf"(?:,\s*(?P<pin>\d{{1,5}}))?(?![\w])(?!\.\d)|(?<![\w])Id\.(?:\s+at\s+(?P<idpin>\d{{1,5}}))?"
    )


def _fallback_cites(text: str, start: int) -> list[tuple[int, int, CaseCite]]:
    found = []
    for m in _reporter_pattern().finditer(text, start):
        if m.group("volume"):
            cite = CaseCite(
                m.group("volume"), re.sub(r"\s+", " ", m.group("reporter")), m.group("page"),
                m.group("pin"), None, None, None, False, False,
            )  # fmt: skip
        else:
            cite = CaseCite("", "", "", m.group("idpin"), None, None, None, True, False)
        found.append((m.start(), m.end(), cite))
    return found


def _name(full: Any) -> str | None:
    meta = full.metadata
    plaintiff, defendant = getattr(meta, "plaintiff", None), getattr(meta, "defendant", None)
    if plaintiff:
        plaintiff = _uncut(plaintiff)
    elif defendant:
        defendant = _uncut(defendant)
    if plaintiff and defendant:
        return f"{plaintiff} v. {defendant}"
    return getattr(meta, "resolved_case_name", None) or plaintiff or defendant


# Up to the last colon, or closed parenthetical followed by words, in what eyecite read as a
# case's name (and a conjunction after it): words before the name, not the name.
_NAME_CUT = re.compile(r"[^\n]*(?::|\)(?=[ \t]+\w))[ \t]+(?:(?:and|or|&)[ \t]+)?")


_SENTENCE_IN_NAME = re.compile(
    r"\b(?P<word>[A-Z]?[a-z]{2,})[.!?][ \t]+(?:Under|In|As|But|See|Because|Here|Per|Like"
    r"|Unlike|After|Following|Applying|Citing)[ \t]+(?=[A-Z])"
)
# The words a case's name abbreviates with a stop (Bluebook T6 and the reporters' own): "Bros.
# Inc.", "Condo. Ass'n", "Mut. Ins. Co." never end a sentence inside a name.
_NAME_ABBREVIATIONS = frozenset(
    {"inc", "corp", "bros", "ltd", "mfg", "mut", "ins", "cas", "nat", "int", "dev", "fin"}
    | {"sav", "tel", "univ", "dept", "dist", "cnty", "twp", "condo", "indem", "grp", "hosp"}
    | {"med", "elec", "prod", "prods", "serv", "servs", "sys", "tech", "transp", "comm", "coop"}
    | {"assocs", "invs", "mgmt", "admin", "auth", "bd", "cmty", "ctr", "gov", "govt", "hous"}
    | {"indus", "intl", "mkt", "natl", "pharm", "prop", "props", "rest", "ret", "sch", "sec"}
    | {"solic", "sur", "util"}
)


def _sentence_end_in_name(text: str, start: int, end: int) -> int | None:
    """Where the name after the last sentence's end in `text[start:end]` begins (past the word
    opening that sentence, "Under"), or None: a stop after a word of three letters or more
    that no name abbreviates, before a word that opens a sentence and no name ("Heron Bay.
    Under Castellanos v. ...")."""
    found = None
    for match in _SENTENCE_IN_NAME.finditer(text, start, end):
        if match.group("word").lower() not in _NAME_ABBREVIATIONS:
            found = match.end()
    return found


def _uncut(name: str) -> str:
    lead = _NAME_CUT.match(name)
    name = name[lead.end() :] if lead is not None and lead.end() < len(name) else name
    ended = _sentence_end_in_name(name, 0, len(name))
    return name[ended:] if ended is not None and ended < len(name) else name


_GENERIC_NAME_TEXT = (
    "in re the of and a an inc llc ltd co corp company state people united states city county "
    "ex rel matter estate"
)
_GENERIC_NAME_WORDS = frozenset(_GENERIC_NAME_TEXT.split())


def _name_words(full: Any) -> list[str]:
    words = []
    for party in (
        getattr(full.metadata, "plaintiff", None),
        getattr(full.metadata, "defendant", None),
    ):
        for word in re.findall(r"[A-Za-z][\w'\u2019-]+", party or ""):
            if word.lower() not in _GENERIC_NAME_WORDS:
                words.append(word)
                break
    return words


def _written_name(short: Any) -> str | None:
    """The name a short form is written with, as eyecite guesses it, without what its guess
    took from the sentence before ("Colo. 2014). Larkspur": "Larkspur"; a name holds no
    closing parenthesis)."""
    guess = getattr(short.metadata, "antecedent_guess", None)
    if not guess:
        return None
    return guess.rsplit(")", 1)[-1].strip(" .;,") or None


def _names_a_party(short: Any, full: Any) -> bool:
    """Whether the name a short form is written with ("Larkspur, 192 P.3d at 1413") is a
    word of a party of the full cite eyecite bound it to, either written in full or
    abbreviated ("Int'l" for "International"); True when either side names no one (nothing to
    compare)."""
    guess = _written_name(short)
    if full is None or not guess:
        return True
    written = [w for w in _words(guess) if w not in _GENERIC_NAME_WORDS]
    parties = [
        w
        for party in (
            getattr(full.metadata, "plaintiff", None),
            getattr(full.metadata, "defendant", None),
        )
        for w in _words(party or "")
    ]
    if not written or not parties:
        return True
    return any(_abbreviates(w, p) or _abbreviates(p, w) for w in written for p in parties)


def _abbreviates(short: str, word: str) -> bool:
    """`short` is `word` or its abbreviation as citations write them (Bluebook T6: a start,
    "Stonebr"; or some of its letters in order, "intl" for "international", "assn" for
    "association"): the same first letter, at least three letters, each found in order."""
    if short == word:
        return True
    if len(short) < 3 or short[0] != word[:1]:
        return False
    rest = iter(word)
    return all(letter in rest for letter in short)


def _words(name: str) -> list[str]:
    """A name's words, lowercased, without periods and apostrophes ("Int'l" -> "intl")."""
    words = re.findall(r"[A-Za-z][\w.'\u2019-]*", name)
    return [re.sub(r"[.'\u2019]", "", w).lower() for w in words]


def _pin(cite: Any) -> str | None:
    pin = getattr(cite.metadata, "pin_cite", None)
    if not pin:
        return None
    pin = re.sub(r"^\s*at\s+", "", pin.strip())
    return pin or None


def _case_cite(cite: Any, full: Any | None) -> CaseCite:
    from eyecite.models import FullCaseCitation, ShortCaseCitation

    short = not isinstance(cite, FullCaseCitation)
    source = cite if full is None else full
    groups = getattr(source, "groups", {}) or {}
    reporter = re.sub(r"\s+", " ", (cite.groups or {}).get("reporter") or "")
    if not short and reporter.endswith(" at"):
        # reporters-db lists "T.C. at" among T.C.'s variations, and eyecite reads "161 T.C. at
        # 219" by it as a full citation of page 219 in some processes (its patterns' order is
        # a set's): a short form, unbound, which the checks bind by name, volume and reporter.
        return CaseCite(
            volume=(cite.groups or {}).get("volume") or "",
            reporter=reporter.removesuffix(" at"),
            page="",
            pin=(cite.groups or {}).get("page"),
            name=None,
            year=None,
            court=None,
            short=True,
            resolved=False,
        )
    year = getattr(source, "year", None) or getattr(source.metadata, "year", None)
    pin = _pin(cite)
    if isinstance(cite, ShortCaseCitation) and pin is None:
        pin = (cite.groups or {}).get("page")
    page = groups.get("page") or ""
    if full is None and isinstance(cite, ShortCaseCitation):
        page = ""  # the page of an unresolved short form is its pin, not the first page
    return CaseCite(
        volume=groups.get("volume") or "",
        reporter=re.sub(r"\s+", " ", groups.get("reporter") or ""),
        page=page,
        pin=pin,
        name=_name(source) if full is not None or not short else None,
        year=int(year) if year and str(year).isdigit() else None,
        court=getattr(source.metadata, "court", None),
        short=short,
        resolved=full is not None,
    )


# A cross-reference to a part of the draft itself before "supra" ("Part II.B, D, supra",
# "Section III, supra", "note 4, supra", "pp. 6-8, supra").
_CROSS_REFERENCE = re.compile(
    r"(?:\bParts?|\bSections?|\bSecs?\.|\u00a7\u00a7?|\bPoints?|\bnotes?|\bnn?\.|\bpp?\.)"
    r"[ \t]*[\w.\u2013-]+(?:[ \t]*(?:,|and|&)[ \t]*[\w.\u2013-]+)*,?[ \t]*supra\W*$"
)


# An explanatory parenthetical that cites another source ("(citing Sandoval, 871 F.3d 118)",
# "(internal quotation marks omitted) (quoting ...)", "(holding ..., and citing ...)"): the
# text from its unclosed "(" to a cite inside it.
_CITING_OPEN = re.compile(
    r"\((?:[^()]{0,300}?\b)?(?:citing|quoting|cited\s+in|quoted\s+in)\b[^()]*$"
)


def _in_citing_parenthetical(text: str, start: int) -> bool:
    """Whether the cite at `start` stands inside an explanatory parenthetical that cites it
    for the main authority before it (Bluebook 4.1: "Id." then means that main authority,
    never the one the parenthetical quotes or cites)."""
    return _CITING_OPEN.search(text, max(0, start - 400), start) is not None


_PARENTHETICAL = re.compile(r"\((?P<court>[^()]{0,80}?)[\s,]*(?:1[6-9]|20)\d\d\)")
_DAY = re.compile(
    r"[\s,]*\b(?:Jan|Feb|Mar|Apr|May|June?|July?|Aug|Sept?|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2}$"
)


def court_text(citation: str) -> str | None:
    """The court a full citation's parenthetical names, without the date: "(9th Cir. 2019)"
    -> "9th Cir."; "(S.D.N.Y. Mar. 3, 2020)" -> "S.D.N.Y."; "(2019)" -> None."""
    found = list(_PARENTHETICAL.finditer(citation))
    if not found:
        return None
    court = _DAY.sub("", found[-1].group("court"))
    court = re.sub(r"\s+", " ", court).strip(" ,")
    return court if re.search(r"[A-Za-z]", court) else None


_ID_SECTION = re.compile(
    rf"\s*\u00a7\u00a7?\s*(?P<section>{statutes.SECTION})(?P<pin>{statutes.SUBSECTIONS})"
)


def _statute_id(text: str, end: int, full: StatuteCite) -> tuple[int, StatuteCite]:
    """An Id. bound to a statute: the same statute, or another section of its code and title
    ("Id. § 1988"), and where the claim ends."""
    match = _ID_SECTION.match(text, end)
    if match is None:
        return end, replace(full, short=True)
    return match.end(), replace(
        full, section=match.group("section"), pin=match.group("pin") or None, short=True
    )


def _with_pin(case: CaseCite, pin: styles.Pin) -> CaseCite:
    """`case` with the pin read by `styles.pin_tail`: its pages (kept from eyecite when the
    pin names a note only), its notes; a pin naming no page or note keeps its words."""
    kept = case.pin if case.pin and re.fullmatch(r"[\d\s\-\u2013]+", case.pin) else None
    pages = pin.pages or kept
    if pin.bare and not pin.pages and not pin.note_text:
        pages = "p."  # "at p." with no number: a pin naming no page
    notes = pin.notes if pin.notes else ((0,) if pin.note_text else ())
    if pages is None and notes:
        pages = case.page or None  # "800 n.4": a note on the first page
    return replace(case, pin=pages, notes=notes)


# A name the draft gives a full citation in a parenthetical right after it (and after the
# record cite of its page, if any): '(the "Opinion" or "Op.")', '(hereinafter "Mem. Op.")',
# '("Kessler II")'. Bluebook rule 4.2(b): a "hereinafter" form is that authority's short form.
_QUOTED_NAME = r"[\"\u201c](?P<n{}>[A-Z][\w.'\u2019&-]*(?:[ \t][\w.'\u2019&-]+){{0,3}})[\"\u201d]"
_DEFINED = re.compile(
    r"\((?:hereinafter,?[ \t]+)?(?:the[ \t]+)?"
    + _QUOTED_NAME.format(1)
    + r"(?:,?[ \t]+(?:or|and)[ \t]+(?:the[ \t]+)?"
    + _QUOTED_NAME.format(2)
    + r")?\)"
)
_BEFORE_DEFINITION = re.compile(r"[ \t]*(?:\([^()\n]{1,40}\)[ \t]*)?")
_DEFINED_PIN = (
    r",?[ \t]+at[ \t]+(?:pp?\.[ \t]*)?"
    r"(?P<pin>\*{0,2}\d{1,5}(?:[ \t]*[-\u2013][ \t]*\*{0,2}\d{1,5})?)(?!\d)"
)


def _add_defined_short_forms(
    text: str, masked: str, result: list[tuple[int, int, CaseCite | StatuteCite]]
) -> None:
    """The short forms of the names the draft gave its full citations ("Op. at *2" after
    '... 2024 WL 2958103 (Del. Ch. 2024) (the "Opinion" or "Op.")'), each that case with its
    pin, after the definition only; a short form read already is left to its reader."""
    taken = Spans([(a, b) for a, b, _ in result])
    added: list[tuple[int, int, CaseCite | StatuteCite]] = []
    for start, end, cite in list(result):
        if not isinstance(cite, CaseCite) or cite.short:
            continue
        # (eyecite may read the parenthetical into the citation's span)
        definition = next(
            (
                found
                for found in _DEFINED.finditer(text, start, min(len(text), end + 80))
                if found.start() < end or _BEFORE_DEFINITION.fullmatch(text, end, found.start())
            ),
            None,
        )
        if definition is None:
            continue
        for name in filter(None, (definition.group("n1"), definition.group("n2"))):
            pattern = re.compile(r"(?<![\w.])" + re.escape(name) + _DEFINED_PIN)
            for use in pattern.finditer(masked, definition.end()):
                if taken.overlaps(use.start(), use.end()):
                    continue
                pin = styles.split_pin(use.group("pin").replace("*", ""))
                short = replace(cite, short=True, court_text=None, notes=())
                added.append((use.start(), use.end(), _with_pin(short, pin)))
                taken.add(use.start(), use.end())
    if added:
        result.extend(added)
        result.sort(key=lambda r: r[0])


def _add_style_cites(
    text: str,
    masked: str,
    result: list[tuple[int, int, CaseCite | StatuteCite]],
    record: Sequence[RecordCite],
    record_ids: list[RecordCite],
) -> None:
    """Id., Ibid. and named short forms that eyecite did not read (`styles.style_cites`),
    added to `result` in order. Id./Ibid. take the citation just before them: a case citation
    (Ibid.: at its pin too), a record cite (the Id. goes to `record_ids`, `record.record_id`),
    not a statute (nothing is added then); with nothing before, an unresolved short form."""
    taken = Spans([(a, b) for a, b, _ in result] + [(c.start, c.end) for c in record_ids])
    added: list[tuple[int, int, CaseCite | StatuteCite]] = []
    by_end = sorted(result, key=lambda r: r[1])
    ends = [r[1] for r in by_end]
    record_ends = sorted(c.end for c in record)
    for found in styles.style_cites(masked):
        if taken.overlaps(found.start, found.end):
            continue
        pin = found.pin
        if found.word:
            at = bisect.bisect_right(ends, found.start) - 1
            candidates = ([by_end[at]] if at >= 0 else []) + added[-1:]
            previous = max(candidates, key=lambda r: r[1], default=None)
            k = bisect.bisect_right(record_ends, found.start) - 1
            if k >= 0 and (previous is None or record_ends[k] > previous[1]):
                # After a record cite, Id. is that record.
                word_end = found.start + len(found.word)
                if pinned_by_record(text, record, word_end):
                    continue  # "Id. at QZR0000041": the record cite is the claim
                ibid = styles.is_ibid(found.word)
                cite = record_id(text, record, found.start, word_end, ibid=ibid)
                if cite is not None and not taken.overlaps(cite.start, cite.end):
                    record_ids.append(cite)
                    taken.add(cite.start, cite.end)
                continue
            before_case = previous[2] if previous is not None else None
            if previous is not None and not isinstance(before_case, CaseCite):
                continue  # a statute's Id. is eyecite's
            if isinstance(before_case, CaseCite):
                case = replace(before_case, short=True, court_text=None)
                if pin is not None:
                    case = _with_pin(replace(case, notes=()), pin)
            else:
                case = CaseCite("", "", "", None, None, None, None, True, False)
                if pin is not None:
                    case = _with_pin(case, pin)
        elif not found.volume:
            # "Kerrigan at ¶ 19": the paragraphs of the case the draft cited in full by that
            # name before; no claim where it cited none so (a witness's or a document's name).
            full = _named_before(result, found.start, found.name or "")
            if full is None or pin is None:
                continue
            case = replace(full, short=True, court_text=None, notes=(), paragraphs=True)
            case = replace(case, pin=pin.pages)
        else:
            case = CaseCite(found.volume, found.reporter, "", None, None, None, None, True, False)
            if pin is not None:
                case = _with_pin(case, pin)
        added.append((found.start, found.end, case))
        taken.add(found.start, found.end)
    if added:
        result.extend(added)
        result.sort(key=lambda r: r[0])


def _named_before(
    result: Sequence[tuple[int, int, CaseCite | StatuteCite]], start: int, name: str
) -> CaseCite | None:
    """The last full case citation before `start` whose name begins with the words of `name`
    ("Kerrigan" of "Kerrigan Tool & Die Co. v. Marlowe Steel Servs., Inc.")."""
    words = _words(name)
    if not words:
        return None
    for a, _, cite in sorted(result, key=lambda r: r[0], reverse=True):
        if a >= start or not isinstance(cite, CaseCite) or cite.short or not cite.name:
            continue
        if (
            _words(cite.name)[: len(words)] == words
            or _words(cite.name)[1 : 1 + len(words)] == words
        ):
            return cite
    return None


def case_citations(
    text: str,
    masked: str,
    record: Sequence[RecordCite],
    deadline: float,
    record_ids: list[RecordCite] | None = None,
) -> list[tuple[int, int, CaseCite | StatuteCite]]:
    """The case citations and statutes of the draft (`masked`: its text with record cites and
    quotations blanked), with spans into `text`. An Id. bound to a statute is a statute; an
    Id. or Ibid. whose nearest preceding cite is a record cite is that record's and goes to
    `record_ids` (`record.record_id`), not to the result."""
    if record_ids is None:
        record_ids = []
    record_by_end = sorted(record, key=lambda c: c.end)
    # Markdown emphasis (*Smith v. Jones*, _Id._ at 4) is no part of a citation: eyecite reads
    # the text without those marks and the spans are mapped back.
    keep = [i for i, char in enumerate(masked) if char not in EMPHASIS]
    compact = "".join(masked[i] for i in keep) if len(keep) < len(masked) else masked

    def start_of(j: int) -> int:
        return keep[j] if j < len(keep) else len(masked)

    def end_of(j: int) -> int:
        return keep[j - 1] + 1 if j > 0 else 0

    found, read_to = _eyecite(compact, deadline)
    start_of_found = {id(item): item.start for item in found}  # in `compact`
    if found:
        from eyecite.models import SupraCitation

        # "See Part II.B, D, supra.": a cross-reference to the draft's own parts, no authority.
        found = [
            item
            for item in found
            if not isinstance(item.cite, SupraCitation)
            or not _CROSS_REFERENCE.search(compact[max(0, item.start - 80) : item.end])
        ]
    eyecite_spans = Spans([(item.start, item.end) for item in found])
    for item in found:
        item.start, item.end = start_of(item.start), end_of(item.end)
    result: list[tuple[int, int, CaseCite | StatuteCite]] = []
    if found:
        from eyecite import resolve_citations
        from eyecite.models import (
            FullCaseCitation,
            FullLawCitation,
            IdCitation,
            ShortCaseCitation,
        )

        full_of: dict[int, Any] = {}
        if time.monotonic() < deadline:
            try:
                resolved = resolve_citations([f.cite for f in found])
            except Exception:
                logger.exception("eyecite could not resolve the citations of a draft")
                resolved = {}
            for resource, cites in resolved.items():
                full = getattr(resource, "citation", None)
                if not isinstance(full, FullCaseCitation | FullLawCitation):
                    continue
                for cite in cites:
                    full_of[id(cite)] = full
        record_ends = sorted(c.end for c in record)
        last_case_end = -1
        # The cite of each subsequent history ("..., cert. denied, 144 S. Ct. 2291 (2024)"),
        # by id: the case it is the history of, which it belongs to (its claim's span), and
        # which an "Id." after it means (Bluebook 10.7, 4.1).
        history_of: dict[int, Any] = {}
        last_full: tuple[int, Any] | None = None  # the last full case cite: result index, cite
        unbound = False  # the last case citation's binding was refused (see below)
        # The last authority cited outside a citing parenthetical (its eyecite resource and
        # whether its binding was refused), and whether the cite just before was in one.
        main: tuple[Any, bool] | None = None
        after_parenthetical = False
        for item in found:
            cite = item.cite
            full = full_of.get(id(cite))
            if isinstance(cite, IdCitation):
                if after_parenthetical and main is not None:
                    full, unbound = main
            else:
                after_parenthetical = _in_citing_parenthetical(compact, start_of_found[id(item)])
            # eyecite binds a short form to the draft's last full cite of the same volume and
            # reporter; one naming another case ("Larkspur, 192 P.3d at 1413" after
            # "Stonebridge ..., 192 P.3d 989") is not that case's (Bluebook 10.9: a short form
            # names a party of the case it shortens), and stays unbound, as does an "Id." after
            # it (an "Id." after any other citation, a statute's or a supra's, is that one's);
            # the checks bind it in the packet by name, volume and pin.
            if not isinstance(cite, IdCitation):
                unbound = isinstance(cite, ShortCaseCitation) and not _names_a_party(cite, full)
            if unbound:
                full = None
            if not isinstance(cite, IdCitation) and not after_parenthetical:
                main = (
                    cite if isinstance(cite, FullCaseCitation | FullLawCitation) else full,
                    unbound,
                )
            if isinstance(cite, FullLawCitation):
                statute = statutes.from_eyecite(cite)
                result.append((item.start, item.end, statute))
                last_case_end = item.end
                # "§§ 1983 and 1988": every section listed is a citation of its own.
                for listed in statutes.listed_sections(text, item.start, item.end, statute):
                    result.append(listed)
                    last_case_end = listed[1]
                continue
            if isinstance(cite, FullCaseCitation):
                if (
                    last_full is not None
                    and result[last_full[0]][1] == last_case_end
                    and _HISTORY.fullmatch(text, last_case_end, item.start)
                ):
                    at, main = last_full
                    history_of[id(cite)] = main
                    result[at] = (result[at][0], item.end, result[at][2])
                    last_case_end = item.end
                    continue
                full = cite
            elif isinstance(cite, IdCitation):
                full = history_of.get(id(full), full)
                # The nearest preceding cite decides what "Id." means: a record cite after the
                # last case citation takes it, unless the case is named again after that record
                # cite.
                at = bisect.bisect_left(record_ends, item.start) - 1
                if at >= 0 and record_ends[at] > last_case_end:
                    between = text[record_ends[at] : item.start]
                    named = full is not None and any(
                        re.search(rf"\b{re.escape(w)}\b", between) for w in _name_words(full)
                    )
                    if not named:
                        full = None
                        word = re.match(r"(?i)id\.", text[item.start : item.end])
                        if word is not None and pinned_by_record(
                            text, record_by_end, item.start + 3
                        ):
                            continue  # "Id. at QZR0000041": the record cite is the claim
                        if word is not None:
                            record_cite = record_id(
                                text, record_by_end, item.start, item.start + 3, ibid=False
                            )
                            if record_cite is not None:
                                record_ids.append(record_cite)
                                continue
            if isinstance(full, FullLawCitation):
                end, statute = _statute_id(text, item.end, statutes.from_eyecite(full))
                result.append((item.start, end, statute))
                last_case_end = end
                continue
            case = _case_cite(cite, full)
            if case.pin and re.match(r"(?:\u00b6|par(?:a|s)?\.)", case.pin):
                case = replace(case, paragraphs=True)
            if case.pin and re.search(r"[^\d\s\-\u2013]", case.pin):
                case = _with_pin(case, styles.split_pin(case.pin or ""))
            if isinstance(cite, FullCaseCitation):
                written = text[item.start : item.end]
                case = replace(case, court_text=court_text(written))
                if case.year is not None and not _PARENTHETICAL.search(written):
                    # eyecite's year from an explanatory parenthetical ("(quoting Corvane,
                    # 12 F.4th at 1189)"): no date of decision, which a parenthetical ends.
                    case = replace(case, year=None)
            # The pin as written (a footnote, "at p.", "at pp."), which eyecite may drop.
            full_cite = isinstance(cite, FullCaseCitation)
            pin = styles.pin_tail(masked, end_of(cite.span()[1]), full=full_cite)
            if pin is None and not full_cite:
                # eyecite's short form may end before its page ("at p. " + "905 n.1"): a note
                # after the claim's end.
                pin = styles.pin_tail(masked, item.end, full=False)
            if pin is not None:
                case = _with_pin(case, pin)
                item.end = max(item.end, pin.end)
            result.append((item.start, item.end, case))
            last_case_end = item.end
            if isinstance(cite, FullCaseCitation):
                last_full = (len(result) - 1, cite)
    if read_to < len(compact):
        logger.warning(
            "eyecite stopped at the time limit after %d of %d characters; the rest is read by "
            "the reporter pattern and never resolved",
            read_to,
            len(compact),
        )
        # An Id. after a record cite is that record's, after the limit too.
        record_ends = [c.end for c in record_by_end]
        last_case_end = max((r[1] for r in result), default=-1)
        for a, b, unresolved in _fallback_cites(compact, read_to):
            start, end = start_of(a), end_of(b)
            if unresolved.short and not unresolved.volume:
                at = bisect.bisect_right(record_ends, start) - 1
                if at >= 0 and record_ends[at] > last_case_end:
                    if pinned_by_record(text, record_by_end, start + 3):
                        continue  # "Id. at QZR0000041": the record cite is the claim
                    record_cite = record_id(text, record_by_end, start, start + 3, ibid=False)
                    if record_cite is not None:
                        record_ids.append(record_cite)
                        continue
            result.append((start, end, unresolved))
            last_case_end = end
    # The forms of the titled codes that eyecite does not read ("42 USC 1983", "section 1983
    # of title 42 of the United States Code").
    for a, b, statute in statutes.titled_statutes(compact):
        if not eyecite_spans.overlaps(a, b):
            result.append((start_of(a), end_of(b), statute))
            for c, d, section in statutes.listed_sections(compact, a, b, statute):
                if not eyecite_spans.overlaps(c, d):
                    result.append((start_of(c), end_of(d), section))
    _add_defined_short_forms(text, masked, result)
    _add_style_cites(text, masked, result, record_by_end, record_ids)
    return _supra_with_reporter(text, result)


def _supra_with_reporter(
    text: str, result: list[tuple[int, int, CaseCite | StatuteCite]]
) -> list[tuple[int, int, CaseCite | StatuteCite]]:
    """ "Thornbury, supra, 214 Ill. 2d at 92" is one citation: the short form in it or right
    after it binds it by volume, reporter and pin, so a supra with a short form with a volume
    gives its span to that short form and is no claim of its own."""
    merged = list(result)
    for outer in result:
        a, b, cite = outer
        if not isinstance(cite, CaseCite) or not cite.short:
            continue
        if not re.search(r"\bsupra\b", text[a:b]):
            continue
        inner = [
            r
            for r in merged
            if r is not outer
            and a < r[0]
            and (r[1] <= b or not text[b : r[0]].strip(" \t,"))
            and isinstance(r[2], CaseCite)
            and r[2].volume
            and r[2].short
        ]
        if len(inner) == 1:
            merged[merged.index(inner[0])] = (a, inner[0][1], inner[0][2])
            merged.remove(outer)
    return merged
