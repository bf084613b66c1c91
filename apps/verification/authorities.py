"""Checks of authorities beyond the reporter citation (pure, no Django): statutes against the
frozen packet, and the court of a case citation against courts-db and reporters-db.

Statute (`statute`): supported when a page of the packet names the same statute: its code,
title and section, matched by the grammar of `apps.verification.claims.statutes` on the page's
text (folded, and on OCR pages read as `index.ocr_read` reads them), so "42 U.S.C. § 1983",
"42 USC 1983", "42 U.S.C.A. §§ 1981, 1983" and "section 1983 of title 42, United States Code"
name one statute, and "§ 1983.5" or "142 U.S.C. § 1983" another. The candidate pages are the
pages holding the section's (and title's) words, from the index's postings: a check reads only
them. Else unsupported, "not in the evidence", which is not a finding that it is fabricated.
Subsections are not compared (a page may name the section and print its subsections lower
down); the finding says when the page does not name the cited subsection.

Court (`court_fits`, on the finding of a full case citation whose parenthetical names a
court):

1. the court must be one courts-db knows: the parenthetical matched to a court's citation
   string (letters and digits compared, initials run together, "2nd" as "2d"; then without
   the words "Ct." and "Court" and in any order, since courts-db and the Bluebook differ
   there: "Colo. App." is courts-db's "Colo. Ct. App.", "B.A.P. 9th Cir." its "9th Cir. BAP";
   then without a district designation), else eyecite's courts-db id (which may come from a
   prefix match), else courts-db's `find_court` on the words (full court names);
2. the year must fall within the court's dates where courts-db has them: not before its
   first period, nor between two (a year after its last period passes: courts-db's record of
   a court can stop where the court did not, D.N.J. ends in 1801 there);
3. the reporter must fit the court by reporters-db's data: a reporter of the federal cite
   type (F.3d, F. Supp., U.S.) reports federal courts only; a state or regional reporter
   (Cal. 4th, N.W.2d) state courts only, of the states its jurisdictions name. A reporter of
   another cite type (specialty, neutral) is not judged.

Where several courts match, one that fits is enough. A mismatch is unsupported, naming what
does not fit; a finding unsupported for another reason (the reporter's years, the name, the
pin) stays as it is, and so does any finding when courts-db or reporters-db fails.
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from apps.verification import normalise as nz
from apps.verification.claims import Claim, StatuteCite
from apps.verification.claims.statutes import mention_pattern
from apps.verification.findings import Finding
from apps.verification.index import OCR, PacketIndex, ocr_read

logger = logging.getLogger(__name__)

NOT_IN_EVIDENCE = "not in the evidence (this does not mean it is fabricated)"
MAX_CANDIDATES = 2000  # pages a statute's section and title words both stand on, read in order


def statute(claim: Claim, index: PacketIndex) -> Finding:
    """The finding on a statute claim (see the module docstring)."""

    cite = claim.statute
    if cite is None or not cite.section:
        return Finding(claim, "unsupported", "statute_in_packet", "the statute could not be read")
    hit = _mention(index, cite.code, cite.title, cite.section)
    if hit is not None:
        page_index, match = hit
        page = index.pages[page_index]
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


def _mention(
    index: PacketIndex, code: str, title: str | None, section: str
) -> tuple[int, re.Match[str]] | None:
    """The first page naming the statute and the match there, or None (looked for once per
    packet index: one statute cited many times)."""
    return index.derived(
        ("statute", code, title, section),
        lambda: _first_mention(index, StatuteCite(code, title, section, None, None)),
    )


def _first_mention(index: PacketIndex, cite: StatuteCite) -> tuple[int, re.Match[str]] | None:
    pattern = mention_pattern(cite)
    for page_index in _candidates(index, cite.section, cite.title):
        page = index.pages[page_index]
        match = pattern.search(nz.fold(ocr_read(page.text) if page.source == OCR else page.text))
        if match is not None:
            return page_index, match
    return None


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


# -- courts ---------------------------------------------------------------------------------

FEDERAL_TYPES = frozenset({"federal", "scotus_early"})
STATE_TYPES = frozenset({"state", "state_regional"})
_GENERIC_COURT_WORDS = frozenset({"ct", "court"})
_DISTRICT = re.compile(r"\s*\b\d+(?:st|nd|rd|th|d)\s+(?:Dist|Dep\'t|Div|App\.\s*Dist)\.?\s*$")
# USPS codes of the states and territories, as reporters-db's jurisdictions ("us:ca;...") write
# them, and the names courts-db gives their courts' locations.
_STATE_CODES = (
    "al=Alabama ak=Alaska az=Arizona ar=Arkansas ca=California co=Colorado ct=Connecticut "
    "de=Delaware dc=Washington_D.C. fl=Florida ga=Georgia hi=Hawaii id=Idaho il=Illinois "
    "in=Indiana ia=Iowa ks=Kansas ky=Kentucky la=Louisiana me=Maine md=Maryland "
    "ma=Massachusetts mi=Michigan mn=Minnesota ms=Mississippi mo=Missouri mt=Montana "
    "ne=Nebraska nv=Nevada nh=New_Hampshire nj=New_Jersey nm=New_Mexico ny=New_York "
    "nc=North_Carolina nd=North_Dakota oh=Ohio ok=Oklahoma or=Oregon pa=Pennsylvania "
    "ri=Rhode_Island sc=South_Carolina sd=South_Dakota tn=Tennessee tx=Texas ut=Utah "
    "vt=Vermont va=Virginia wa=Washington wv=West_Virginia wi=Wisconsin wy=Wyoming "
    "pr=Puerto_Rico gu=Guam vi=Virgin_Islands as=American_Samoa mp=Northern_Mariana_Islands"
)
_STATES = {
    code: name.replace("_", " ") for code, name in (p.split("=") for p in _STATE_CODES.split())
}


def court_fits(finding: Finding) -> Finding:
    """The finding on a case citation, with the court check (see the module) applied when the
    citation is a full one whose parenthetical names a court and nothing else is wrong with it
    than perhaps its absence from the packet."""
    claim = finding.claim
    cite = claim.citation
    if cite is None or cite.short or not (cite.court_text or cite.court):
        return finding
    if finding.status != "supported" and finding.check != "case_in_packet":
        return finding
    try:
        problem = court_problem(cite.court_text, cite.court, cite.year, cite.reporter)
    except Exception:  # courts-db or reporters-db data of a shape not foreseen
        logger.exception("the court check failed on %r", claim.text)
        return finding
    if problem is None:
        return finding
    check, message = problem
    if check == "case_court" and finding.status == "supported":
        # The packet holds the opinion: a court our data cannot read ("Fla. 5th DCA") says
        # nothing against it, where a court that did not sit then, or that the reporter does
        # not report, does.
        return replace(finding, message=f"{finding.message} ({message})")
    if finding.status != "supported":
        message = f"{message}; the opinion is also {NOT_IN_EVIDENCE}"
    return replace(
        finding,
        status="unsupported",
        check=check,
        message=message,
        excerpt=finding.excerpt,
    )


_STATE_APPEALS = re.compile(r"(?:Ct\.\s*)?App\.")


def court_problem(
    court_text: str | None, court_id: str | None, year: int | None, reporter: str
) -> tuple[str, str] | None:
    """(check, message) when the court does not exist, does not fit the year or does not fit
    the reporter; None when it fits (or nothing can be said)."""
    if court_text is not None and _STATE_APPEALS.fullmatch(court_text.strip()):
        # "(App. 2020)" after "248 Ariz. 311": the intermediate court of appeals of the state
        # whose official reporter the citation names (Arizona's form), no court of its own
        # (courts-db reads "App." as Appomattox County's).
        return None
    courts = _find_courts(court_text, court_id)
    named = f"{court_text!r}" if court_text else f"the court {court_id!r}"
    if not courts:
        return "case_court", f"{named} is not a court that courts-db knows"
    if year is not None:
        sitting = [c for c in courts if _sat_in(c, year)]
        if not sitting:
            court = courts[0]
            return (
                "case_court_year",
                f"{court['name']} ({_dates_label(court)}) did not sit in {year}",
            )
        courts = sitting
    scope = _reporter_scope(reporter)
    if scope is None:
        return None
    kind, states = scope
    if any(_reporter_fits(c, kind, states) for c in courts):
        return None
    court = courts[0]
    if kind == "federal":
        return (
            "case_reporter_court",
            f"{reporter} reports federal courts; {court['name']} is not one",
        )
    where = ", ".join(sorted(_STATES.get(s, s.upper()) for s in states)) or "the states"
    if court.get("system") != "state":
        return (
            "case_reporter_court",
            f"{reporter} reports state courts ({where}); {court['name']} is not one",
        )
    return (
        "case_reporter_court",
        f"{reporter} reports the courts of {where}; {court['name']} is a court of "
        f"{court.get('location')}",
    )


def _reporter_fits(court: dict[str, Any], kind: str, states: frozenset[str]) -> bool:
    system = court.get("system")
    if kind == "federal":
        return system == "federal"
    if system != "state":
        return False
    if not states:
        return True
    return court.get("location") in {_STATES.get(s) for s in states}


@functools.lru_cache(maxsize=512)
def _reporter_scope(reporter: str) -> tuple[str, frozenset[str]] | None:
    """("federal", {}) or ("state", {state codes}) for a reporter reporters-db gives a federal,
    state or regional cite type; None for any other or an unknown reporter."""
    import reporters_db

    kinds: set[str] = set()
    states: set[str] = set()
    for entries in reporters_db.REPORTERS.values():
        for entry in entries:
            if reporter not in entry.get("editions", {}):
                continue
            kind = entry.get("cite_type", "")
            kinds.add(
                "federal" if kind in FEDERAL_TYPES else "state" if kind in STATE_TYPES else kind
            )
            for jurisdiction in entry.get("mlz_jurisdiction") or []:
                match = re.match(r"us:([a-z]{2})(?:[;:]|$)", jurisdiction)
                if match:
                    states.add(match.group(1))
    if len(kinds) != 1 or next(iter(kinds)) not in ("federal", "state"):
        return None
    kind = next(iter(kinds))
    return kind, frozenset(states) if kind == "state" else frozenset()


def _sat_in(court: dict[str, Any], year: int) -> bool:
    """Whether courts-db lets the court have sat in `year`: not before its first start, nor
    between two of its periods. A year after its last end date is let pass: courts-db's record
    of a court can stop where the court did not (D.N.J. ends in 1801 there)."""
    ranges = sorted(
        (
            int(str(d["start"])[:4]) if d.get("start") else None,
            int(str(d["end"])[:4]) if d.get("end") else None,
        )
        for d in court.get("dates") or []
        if d.get("start")
    )
    if not ranges:
        return True
    if year < ranges[0][0]:  # type: ignore[operator]  # starts are set (filtered above)
        return False
    for (_, end), (start, _) in itertools.pairwise(ranges):
        if end is not None and start is not None and end < year < start:
            return False
    return True


def _dates_label(court: dict[str, Any]) -> str:
    parts = []
    for d in court.get("dates") or []:
        start = str(d.get("start") or "")[:4]
        end = str(d.get("end") or "")[:4]
        if start or end:
            parts.append(f"{start or '?'}-{end}" if end else f"from {start}")
    return ", ".join(parts) or "dates unknown"


def _court_key(text: str, *, loose: bool = False) -> str:
    """A court's abbreviation as comparable words: lowercased letters and digits, initials run
    together ("S.D.N.Y." and "SDNY" -> "sdny", "N.Y." and "NY" -> "ny"), "2nd" as "2d"; loose:
    without "Ct." and "Court", in any order ("B.A.P. 9th Cir." = "9th Cir. BAP")."""
    words: list[str] = []
    initials = ""
    for word in re.findall(r"[a-z0-9]+", text.lower().replace("\u2019", "").replace("'", "")):
        if len(word) == 1 and word.isalpha():
            initials += word
            continue
        if initials:
            words.append(initials)
            initials = ""
        words.append(re.sub(r"^(\d+)(?:nd|rd)$", r"\1d", word))
    if initials:
        words.append(initials)
    if loose:
        words = sorted(w for w in words if w not in _GENERIC_COURT_WORDS)
    return " ".join(words)


@functools.lru_cache(maxsize=1)
def _court_tables() -> tuple[
    dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]
]:
    import courts_db

    by_id: dict[str, dict[str, Any]] = {}
    exact: dict[str, list[dict[str, Any]]] = {}
    loose: dict[str, list[dict[str, Any]]] = {}
    for court in courts_db.courts:
        by_id[court["id"]] = court
        citation = court.get("citation_string") or ""
        if not citation.strip():
            continue
        exact.setdefault(_court_key(citation), []).append(court)
        loose.setdefault(_court_key(citation, loose=True), []).append(court)
    return by_id, exact, loose


@functools.lru_cache(maxsize=1024)
def _find_courts_cached(court_text: str | None, court_id: str | None) -> tuple[Any, ...]:
    by_id, exact, loose = _court_tables()
    # The parenthetical's own words first: eyecite's id may come from a prefix match.
    for text in dict.fromkeys([court_text or "", _DISTRICT.sub("", court_text or "")]):
        if not text:
            continue
        found = exact.get(_court_key(text)) or loose.get(_court_key(text, loose=True))
        if found:
            return tuple(found)
    if court_id and court_id in by_id:
        return (by_id[court_id],)
    if not court_text:
        return ()
    return tuple(by_id[i] for i in _find_court(court_text) if i in by_id)


def court_terms(court_text: str | None, court_id: str | None) -> frozenset[str]:
    """The key terms of the names of the court a citation's parenthetical names ("9th Cir.":
    "court", "appeal", "ninth", "circuit"): the cited opinion's own words, printed in its
    caption, which a sentence naming that court ("The Ninth Circuit has held") asks no pinned
    page to print. Empty when the court is not known."""
    try:
        courts = _find_courts(court_text, court_id)
    except Exception:  # courts-db data of a shape not foreseen: the pin is judged on all words
        logger.exception("the court's names could not be read for %r", court_text or court_id)
        return frozenset()
    names = " ".join(str(c.get("name", "")) for c in courts)
    return frozenset(nz.content_terms(nz.token_list(names)))


# How an opinion's first page names its author or its panel: "Okonjo, J.", "OKONJO, District
# Judge", "Before HALE, Chief Judge, and PRUITT, Circuit Judge", "Justice Marlowe delivered".
_JUDGE = re.compile(
    r"\b(?P<a>[A-Z][A-Za-z'\u2019-]{2,}),\s+(?:(?:Chief|Senior|Presiding)\s+)?"
    r"(?:J{1,2}\.|C\.\s?J\.|P\.\s?J\.|(?:District|Circuit|Magistrate|Bankruptcy)\s+Judges?|Justices?)"
    r"|\b(?:Judge|Justice)\s+(?P<b>[A-Z][A-Za-z'\u2019-]{2,})"
)
JUDGE_WORDS = ("judge", "justice", "court")
CAPTION_CHARACTERS = 6000  # of an opinion's first page, where its caption and author stand


def judge_terms(first_page: str) -> frozenset[str]:
    """The key terms of the judges an opinion's first page names as its author or panel, with
    "judge" and "justice": a sentence that says who decided it ("Judge Okonjo applied ...")
    asks no pinned page to print the name, which the caption prints. Empty when it names
    none."""
    names = {
        match.group("a") or match.group("b")
        for match in _JUDGE.finditer(first_page, 0, CAPTION_CHARACTERS)
    }
    if not names:
        return frozenset()
    return frozenset(nz.content_terms(nz.token_list(" ".join([*names, *JUDGE_WORDS]))))


def _find_courts(court_text: str | None, court_id: str | None) -> list[dict[str, Any]]:
    return list(_find_courts_cached(court_text, court_id))


def _find_court(text: str) -> Iterable[str]:
    """courts-db's `find_court` on a court's name (its regexes), for a parenthetical with a
    word written out (its first call compiles courts-db's patterns, a few seconds once per
    process; abbreviations alone never get there). An error propagates: the
    caller (`court_fits`) then leaves the finding as it was, never calling the court unknown."""
    if len(text) > 120 or not re.search(r"[A-Za-z]{4,}(?![.\w])", text):
        return ()  # abbreviations only ("14th Cir."): no name for find_court to read
    import courts_db

    return courts_db.find_court(text)


def _excerpt(text: str, start: int, end: int, *, around: int = 80) -> str:
    left = max(0, start - around)
    right = min(len(text), end + around)
    return " ".join(text[left:right].split())


__all__ = ["NOT_IN_EVIDENCE", "court_fits", "court_problem", "statute"]
