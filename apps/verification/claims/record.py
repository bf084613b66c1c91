"""Record cites: Bates numbers and ranges of the case's prefixes (or of any PREFIX+digits label),
"Ex. 3 at ACME000022", pins, "Compl. ¶ 4", "Dkt. 12 at 3", "1 App. 24"; cites naming their
document, "Ex. 3 at 2" and, where a cite belongs, a name or title with a pin ("Subcontract at 3",
'"site-log.pdf" ¶ 4'; resolved by apps.verification.exhibits); and, where a record cite belongs,
what is none (apps.verification.claims.references)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from apps.verification.claims.base import TITLE_SMALL_WORDS, BatesRef, Kind, Spans, series_label
from apps.verification.claims.quotations import Quote
from apps.verification.claims.references import (
    FISCAL_YEAR,
    JUNK,
    LEGAL_UNIT_FIRST,
    NOT_A_CITE_SHAPE,
    NUMBERED,
    PIN_TAIL,
    PINNED_OWN_WORK,
    PROSE_REFERENCE,
    SIGNAL,
    YEAR_END,
    drafters_party,
    is_case_number,
    is_generated,
    names_a_brief_part,
    names_a_thing,
    own_brief_start,
    own_part_labels,
    own_work_start,
)
from apps.verification.claims.sentences import trim

_PIN = re.compile(
    r"(?:,?\s*(?:at\s+)?(?P<para>¶¶?|paras?\.|paragraphs?)\s*(?P<pn>\d+(?:\s*[-\u2013]\s*\d+)?)"
    r"|\s+at\s+(?P<at>\d+(?::\d+)?(?:\s*[-\u2013]\s*\d+(?::\d+)?)?)(?!\s*[ap]\.?m\b|[\d:])"
    # (lines running onto a later page: "RR 106:21-107:12")
    r"|:(?P<line>\d+(?:\s*[-\u2013]\s*\d+(?::\d+)?)?)"
    r"|,?\s+(?:at\s+)?(?P<pp>pp?\.)\s*(?P<pg>\d+(?:\s*[-\u2013]\s*\d+)?)"
    r"|\s+(?P<tr>\d+:\d+(?:\s*[-\u2013]\s*\d+(?::\d+)?)?))"
)
_EXHIBIT_BEFORE = re.compile(
    r"(?:\bEx(?:h(?:ibit)?)?s?\.?|\bExhibit|\bTab)\s+[A-Z0-9]{1,4}(?:-\d+|-[A-Z]{1,2})?,?\s+"
    r"(?:at\s+)?$"
)
# A page suffix after a Bates number: a dot and 1-6 digits ("ABC000101.0002", page 2 of the
# document numbered ABC000101).
_PAGE_SUFFIX = r"(?:\.(?P<page>\d{1,6})(?!\d))?"
_GENERIC = re.compile(
    r"(?<![\w.-])(?P<prefix>[A-Z]{2,10}(?:[-_.][A-Z]{1,10})?[-_.]?)(?P<num>\d{3,12})"
    + _PAGE_SUFFIX
    + r"(?![\w])"
)
_DOCKET = re.compile(
    r"(?<![\w])(?:Dkt|ECF|D\.E)\.?\s*(?:No\.?\s*)?\d+(?:\s*[-\u2013]\s*\d+)?(?![\w])"
)
# The page a court's electronic filing stamps on every page of a filed record ("PageID.512",
# "PageID #: 1173"), cited with its docket entry, as the Sixth Circuit's district courts cite
# the record: "ECF No. 9-4, PageID.512", "ECF No. 9-7, PageID.639-40". A PageID alone names a
# page of some filing, perhaps another case's: a number printed on a page, no Bates number of
# this production (read as a thing where a cite belongs).
_PAGE_ID_NUMBERS = (
    r"\d{1,7}(?:[ \t]*[-\u2013][ \t]*\d{1,7})?(?:,[ \t]*\d{1,7}(?:[ \t]*[-\u2013][ \t]*\d{1,7})?)*"
)
_PAGE_ID = re.compile(rf",?[ \t]*PageID[ \t]*(?:\.|#:?)?[ \t]*(?P<ids>{_PAGE_ID_NUMBERS})(?![\w])")
# A docket entry pinned by the page its filing header counts ("Doc. 45-3 at 7", the Eleventh
# Circuit's form; "Dkt." and "ECF No." are read by _DOCKET): the page of that entry whose
# header says "Page 7 of N" (checks/record.py).
# (New York's e-filed record likewise, by the order of the pages its header stamps: "NYSCEF
# Doc. No. 45 at 3", "NYSCEF Doc. No. 45, at 3")
_DOC_ENTRY = re.compile(
    r"(?<![\w])(?:NYSCEF\s+)?Doc\.\s*(?:No\.\s*)?\d{1,5}(?:-\d{1,3})?(?=,?\s+at\s+\d)"
)
# A file of an agency's appeal by its tab (and subtab) and page, as the Merit Systems Protection
# Board's decisions and briefs cite the initial appeal file ("IAF, Tab 15 at 2", "IAF, Tab 9,
# Subtab 4e at 2", "(IAF, Tab 12)"): the document the tab names (`exhibits.titled`, else the
# binder's document in that place), at its page.
_FILE_TAB = re.compile(
    r"(?<![\w])[A-Z]{2,5},[ \t]+(?P<tab>Tab[ \t]+\d{1,3})"
    r"(?:,[ \t]+(?P<sub>Subtab[ \t]+\d{1,2}[a-z]{0,2}))?(?![\w-])"
)
# ... and its hearing transcript by page alone ("HT 112"; "HT at 45" is read as a pleading's)
_HEARING_TRANSCRIPT = re.compile(
    r"(?<![\w])HT[ \t]+(?P<pages>\d{1,4}(?:[ \t]*[-\u2013][ \t]*\d{1,4})?)(?![\w:.])"
)
# The Trademark Trial and Appeal Board's record: "14 TTABVUE 6" is page 6 of docket entry 14,
# as TTABVUE prints on each page it files ("Opposition No. 91287654   14 TTABVUE 6").
_TTABVUE = re.compile(
    r"(?<![\w])\d{1,4}[ \t]+TTABVUE[ \t]+"
    r"(?P<pages>\d{1,4}(?:[ \t]*[-\u2013][ \t]*\d{1,4})?)(?![\w])"
)
# Pennsylvania's notes of testimony, cited by the hearing's day and the transcript's page
# ("N.T., 3/15/2023, at 203", "N.T. 3/14/23, 112-13", "N.T. Mar. 15, 2023 at 4"): the
# transcript of that day (its file names the day), at the page it prints.
_NOTES_OF_TESTIMONY = re.compile(
    r"(?<![\w])N\.T\.,?[ \t]+(?:\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})"
    r"|[A-Z][a-z]{2,8}\.?[ \t]+\d{1,2},[ \t]+\d{4}),?(?=[ \t]+(?:at[ \t]+)?\d)"
)
# A transcript cited by its volume and page, Massachusetts' way ("Tr. II:112", "Tr. III:86-88"):
# a Roman volume before the colon (a page:line cite's page is in digits), its page after.
_VOLUME_PAGE_TRANSCRIPT = re.compile(
    r"(?<![\w])(?:Trial[ \t]+)?Tr\.[ \t]+(?P<volume>[IVX]{1,5}):[ \t]?"
    r"(?P<pages>\d{1,4}(?:[ \t]*[-\u2013][ \t]*\d{1,4})?)(?![\w:])"
)
# A transcript by the letter T and its volume, Minnesota's way (Minn. R. Civ. App. P. 128.03:
# "T. II 45", "2T. 45", "T. II 45-46"): that volume's page. ("T. 45" with no volume is the
# transcript's record word, `_RECORD_WORDS`.)
LETTER_VOLUME_TRANSCRIPT = re.compile(
    r"(?<![\w.])(?:(?P<n>\d{1,2})T\.|T\.[ \t]+(?P<roman>[IVX]{1,5}))[ \t]+"
    r"(?P<pages>\d{1,4}(?:[ \t]*[-\u2013][ \t]*\d{1,4})?)(?![\w:])"
)
# New Jersey's transcripts, designated by number in the brief's list ("1T - Transcript of
# bench trial, March 5, 2024", R. 2:6-8(a)) and cited by designation, page and lines
# ("1T45:19-21", "2T112:21 to 113:4", "1T45"): that transcript's page.
_DESIGNATED_TRANSCRIPT = re.compile(
    r"(?<![\w.])(?P<n>\d{1,2})T(?P<page>\d{1,4})"
    r"(?::(?P<lines>\d{1,2}(?:[ \t]*(?:[-\u2013]|to)[ \t]*\d{1,4}(?::\d{1,2})?)?)"
    r"|[-\u2013](?P<last>\d{1,4}))?(?![\w:])"
)
_CODE_GOES_ON = re.compile(r"(?:[-_./:][A-Za-z0-9]+)+(?<![.:])")
# A transcript cited by its hearing's day and its page, as Colorado's briefs cite them (C.A.R.
# 28(e): "TR 3/5/24, p. 43:16-17", "Tr. 3/5/24, pp. 45-46") and Arizona's its reporter's
# transcript ("RT 3/5/24 at 43"): that day's transcript, at the page (and lines) it prints.
_DATED_TRANSCRIPT = re.compile(
    r"(?<![\w.])(?:TR|Tr\.|RT)[ \t]+(?P<day>\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})),?[ \t]+"
    r"(?:at[ \t]+)?(?:pp?\.[ \t]*)?(?P<page>\d{1,4})"
    r"(?::(?P<lines>\d{1,2}(?:[ \t]*[-\u2013][ \t]*\d{1,4}(?::\d{1,2})?)?)"
    r"|[ \t]*[-\u2013][ \t]*(?P<last>\d{1,4})(?!:))?(?![\w:])"
)
# Washington's report of proceedings cited by its hearing's day (RAP 10.3, "RP (Mar. 5, 2024)
# at 44"): that day's report, at the page it prints.
_DATED_REPORT = re.compile(
    r"(?<![\w.])V?RP[ \t]+\((?P<day>[A-Z][a-z]{2,8}\.?[ \t]+\d{1,2},[ \t]+\d{4})\)"
    r"(?=,?[ \t]+(?:at[ \t]+)?(?:pp?\.[ \t]*)?\d)"
)
_LINES_TO = re.compile(r"[ \t]*(?:to|[-\u2013])[ \t]*")


def _page_pin(match: re.Match[str]) -> str:
    """The pin of a transcript cite read with its page, lines and last page: "45:19-21",
    "112:21-113:4" (lines running onto a later page), "at 45-46"."""
    page, lines, last = match.group("page", "lines", "last")
    if lines:
        return f"{page}:{_LINES_TO.sub('-', lines)}"
    return f"at {page}" + (f"-{last}" if last else "")


_DESIGNATION = re.compile(
    r"(?m)^[ \t>*_-]*[\"\u201c]?(?P<n>\d{1,2})T[\"\u201d]?[ \t]*"
    r"(?:[-\u2013\u2014=:]|refers[ \t]+to|means)[ \t]*(?P<what>[^\n]{3,200})$"
)
_BARE_PAGE = re.compile(r"[ \t]+(\d{1,4}(?:[-\u2013]\d{1,4})?)(?![\w:])")
# A transcript cited by its volume and its page and lines ("Trial Tr. vol. II, 145:1-3", "Tr.
# Vol. 2 at 45:3"): the volume names the transcript's file (paragraphs.pleading_pages).
_VOLUME_TRANSCRIPT = re.compile(
    r"(?<![\w])(?:(?:Trial|Hr['\u2019]g|Hearing|Sent(?:encing)?\.?)\s+)?Tr\.\s+[Vv]ol(?:ume)?\.?"
    r"\s+(?:[IVX]{1,5}|\d{1,2}),?(?=\s+(?:at\s+)?\d{1,5}:\d)"
)
_PLEADING = re.compile(
    r"(?<![\w])(?:[A-Z][a-z]+\s+)?(?:Am\.\s+)?(?:Complaint|Compl|Countercl|Answer|Ans|Petition|Pet|Mem|Mot|Opp['\u2019]?n|Reply|Decl|Aff"
    r"|Dep|Tr|Hr['\u2019]g\s+Tr|HT|Resp|Br|Stip|Interrog|PSR)\.?(?=\s*(?:¶|at\s+\d|\d+:\d))"
)
_OWN_DRAFT = re.compile(r"(?i)\bdraft\b")
_BRIEF_WORD = re.compile(r"(?:Br|Mem|Reply)\b")  # a brief's own word, where _PLEADING starts
_DRAFT_BEFORE = re.compile(
    r"(?i)\bdraft[ \t]+$"
)  # the name's word just before: "Draft Reply Decl."
_APPENDIX_BODY = (
    r"(?:App|J\.\s?A|E\.\s?R|S\.\s?A|C\.\s?A|R|Supp\.\s?App)\.\s*\d{1,5}"
    r"(?:\s*[-\u2013]\s*\d+)?(?![\w])"
)
_APPENDIX = re.compile(r"^(?:\d{1,2}\s+)?" + _APPENDIX_BODY)
# "1 App. 24" anywhere a cite can start (not "301 Or. App. 512": a reporter's "App." follows a
# word; the volume of an appendix cite follows a space, a bracket or a signal).
_APPENDIX_ANYWHERE = re.compile(
    r"(?=\d)"  # (at a digit only: the lookbehinds are not tried at every character)
    r"(?:(?<=^)|(?<=[(\[;])|(?<=[(\[;,:]\s)|(?<=\b[Ss]ee\s)|(?<=\balso\s)|(?<=\b[Cc]f\.\s)"
    r"|(?<=\.\s))\d{1,2}\s+" + _APPENDIX_BODY,
    re.MULTILINE,
)
# (A binder's tab is an exhibit of it: "Tab 7 at 3", "Tabs 4-5": an exhibit binder's documents,
# as an agency's or an appellate appendix's tabbed volume holds them.)
_EXHIBIT = re.compile(
    # (the Tax Court's stipulated exhibits carry their party's letter: "Ex. 25-P", "Ex. 1-J")
    r"^(?:(?:Ex(?:h(?:ibit)?)?s?\.|Exhibit|Tabs?)\s+(?:[A-Z]{1,2}|\d{1,4})"
    r"(?:-\d+|-[A-Z]{1,2}\b)?"
    # Trial exhibits by party: plaintiff's, defendant's, joint, government's ("PX-12",
    # "DTX 7", "JX3").
    r"|(?:[PDJGCR]|[PDJ]T)X[-\s]?\d{1,4}"
    r"|(?:GC|CP|Jt\.|R)[ \t]+Exh?\.[ \t]+\d{1,4})(?![\w])"
)
# A trial or arbitration exhibit by party ("CX-12", "RX 4", "PX12", "DTX-7"): its label,
# "CX12", which the packet's documents may carry (apps.verification.exhibits).
_PARTY_EXHIBIT = re.compile(r"(?P<party>(?:[PDJGCR]|[PDJ]T)X)[-\s]?(?P<n>\d{1,4})(?![\w])")
# An exhibit named by its number or letter ("Ex. 3", "Exh. B", "Exhibit 12"): which document it
# is, the packet says (apps.verification.exhibits).
# (a party's series before it: "GC Exh. 7", "R Exh. 3", "Jt. Exh. 1": `base.series_label`)
_EXHIBIT_NUMBER = re.compile(
    r"(?<![\w])(?:(?P<series>GC|CP|Jt\.|R)[ \t]+)?"
    r"(?:Ex(?:h(?:ibit)?)?\.|Exhibit)\s+(?P<n>[A-Z]{1,2}|\d{1,4}(?:-[A-Z]{1,2})?)(?![\w-])"
)
# A court's abbreviation and a year alone, a case citation's parenthetical ("(App. 2020)"):
# never an appendix's page.
_COURT_YEAR = re.compile(r"App\.\s*(?:1[6-9]|20)\d\d")
# A binder's tab ("Tab 7"): a name first, which a document may print ("[AR Tab 14]"), else the
# binder's document in that place (checks.context reads it so).
_TAB = re.compile(r"Tabs?\s+(?P<n>[A-Z]{1,2}|\d{1,4})(?![\w-])")
# A document named by its name or title with a page pin, where a cite belongs ("Subcontract at
# 3", "Voss Letter, p. 2", '"site-log.pdf" at 2'): the name is checked against the packet's
# documents, never against a list of words. A quoted name is part of the cite.
_NAME_PIN = (
    r"(?:(?:,?\s+at\s+|,\s+(?:at\s+)?pp?\.\s*)"
    r"(?P<pin>\d{1,4}(?:\s*[-\u2013]\s*\d{1,4})?)(?!\s*[ap]\.?m\b|[\d:])"
    r"|,?\s+(?:at\s+)?(?P<marks>\u00b6\u00b6?)\s*(?P<para>\d{1,3}(?:\s*[-\u2013]\s*\d{1,3})?)(?!\d))"
)
# A patent by its short name (its number's last three digits) and a column with its lines:
# "'482 patent at 5:19-22", "'482 patent at 5:25-6:3", "'482 patent, col. 5, ll. 19-22",
# "'482 patent at col. 5".
_PATENT_COLUMNS = re.compile(
    r"(?P<name>['\u2019]\d{3}[ \t]+[Pp]atent)[ \t]*,?[ \t]+(?:at[ \t]+)?"
    r"(?:(?:cols?\.|columns?)[ \t]*(?P<col>\d{1,3})(?![\d:])"
    r"(?:,?[ \t]*(?:ll?\.|lines?)[ \t]*\d{1,3}(?:[ \t]*[-\u2013][ \t]*\d{1,3})?)?"
    r"|(?:cols?\.[ \t]*)?(?P<c1>\d{1,3}):\d{1,3}"
    r"(?:[ \t]*[-\u2013][ \t]*(?:(?P<c2>\d{1,3}):)?\d{1,3})?)(?![\d:])"
)
_QUOTED_NAME = re.compile(
    r"(?P<open>[\"\u201c])(?P<name>[^\"\u201c\u201d\n]{2,80})[\"\u201d]" + _NAME_PIN + r"\s*$"
)
_PLAIN_NAME = re.compile(r"(?:the\s+)?(?P<name>[A-Z0-9][^,;()\n]{1,80}?)" + _NAME_PIN + r"\s*$")
# What makes a "Name at 3" some other cite: a case's short form ("Smith, 123 F.3d at 4" has a
# comma; "Id.", "supra"), a statute's section, a law's numbered unit.
_NOT_A_NAME = re.compile(r"\b(?:Id|Ibid|supra|infra|v|vs|n|nn)\.|\bsupra\b|\u00a7|\bv\.\s", re.I)


# A pin of pages (not of paragraphs or lines) as `_pin_text` writes it: "at 4", "p. 4",
# "pp. 4-5".
_PAGE_PIN = re.compile(r"(?:at|pp?\.) \d+(?:[-\u2013]\d+)?")
# What may stand between two record cites of one citation ("QZR0000040; Ex. 3 at 2").
_ID_AT = re.compile(r"[ \t,]*(?:at[ \t]+)?")
_ONE_CITATION = re.compile(r"[\s,;]*(?:(?:see(?:\s+also)?|cf\.|and)[\s,]+)?", re.I)


# An exhibit's label and the opening of the parenthetical that says what the exhibit is, as an
# exhibit list or an index of exhibits writes it ("Ex. 7 (Liang sales plan)"): a description,
# never a cite of its own.
_AFTER_EXHIBIT = re.compile(r"\b(?:Ex|Exh|Exhibit|Tab)s?\.?[ \t]+[A-Z0-9]{1,4}[ \t]*\([ \t]*$")
# A name just before a parenthesis ("Hadley (U.S. Patent No. 9,871,204)", "Priya Raman-Holt
# (Reg. No. 71,246)"): a number in it says what or who the name is, an apposition, no cite.
_LIST_ITEM_AFTER = re.compile(r"\)[ \t]*,[ \t]+(?:and[ \t]+)?(?:an?|the)[ \t]")
_NAME_BEFORE = re.compile(r"(?<![.!?:;]\s)(?<![.!?:;])\b[A-Z][\w'\u2019-]*[ \t]*\([ \t]*$")


def _exhibit_label(match: re.Match[str]) -> str:
    """An `_EXHIBIT_NUMBER` match's label: its number, or its series' label ("GCX7")."""
    series = match.group("series")
    return (series and series_label(series, match.group("n"))) or match.group("n")


def pinned_by_record(text: str, cites: Sequence[RecordCite], word_end: int) -> bool:
    """Whether the "Id." ending at `word_end` is pinned by a record cite of `cites` (in
    position order) that follows it ("Id. at QZR0000041"): that record cite is the claim."""
    k = bisect.bisect_left(cites, word_end, key=lambda c: c.start)
    return k < len(cites) and _ID_AT.fullmatch(text, word_end, cites[k].start) is not None


def record_id(
    text: str, cites: Sequence[RecordCite], at: int, word_end: int, *, ibid: bool
) -> RecordCite | None:
    """An "Id." or "Ibid." (from `at` to `word_end` in `text`) whose nearest preceding cite is a
    record cite, the last of `cites` (disjoint, in position order) before it: that record
    (Bluebook rule 4.1, California Style Manual 1:2). "Ibid." and "Id." with no pin are the
    record cite again, at its pins;
    "Id. at 4" / "(Id. at p. 4.)" / "Id. ¶ 6" / "Id. at 46:1-5" pin that record's document at
    another page, paragraph or line: a cite naming its document ("Ex. 3 at 2", "Subcontract at
    3", "Voss Dep. 45:3") in that document, a Bates cite's paragraph or line pins on its pages.
    A page number after a Bates cite is returned with kind "case_citation": the page of the
    document the Bates page is in, or a pin of a case cited before the record cite, as the
    packet says (`checks`). None where there is no such cite, where the cite before is none of
    this case's (`not_a_record_cite`), or where it is one of several sources of one citation
    (rule 4.1: "id." only follows a citation of one source)."""
    k = bisect.bisect_right(cites, at, key=lambda c: c.end) - 1
    if k < 0 or pinned_by_record(text, cites, word_end):
        return None
    antecedent = cites[k]
    if (
        k > 0
        and _TTABVUE.fullmatch(text, antecedent.start, antecedent.end)
        and cites[k - 1].kind == "record_cite"
        and re.fullmatch(r"[ \t]*,[ \t]*", text[cites[k - 1].end : antecedent.start])
    ):
        # "Varga Decl. ¶ 11, 15 TTABVUE 3": one source, and where it is filed; Id. is the source.
        k -= 1
        antecedent = cites[k]
    if antecedent.kind != "record_cite":
        return None
    if k > 0 and _ONE_CITATION.fullmatch(text, cites[k - 1].end, antecedent.start):
        return None  # several sources in the citation before: which one is meant is unsaid
    end, pins = (word_end, []) if ibid else _pins_after(text, word_end)
    cited_as = antecedent.cited_as or text[antecedent.start : antecedent.end]
    if not pins:
        return RecordCite(
            "record_cite",
            at,
            end,
            antecedent.bates,
            antecedent.pins,
            antecedent.exhibit,
            antecedent.title,
            cited_as,
        )
    bates = antecedent.bates
    if bates and any(_PAGE_PIN.fullmatch(pin) for pin in pins):
        # A page number after a Bates cite: a page of the document that Bates page is in, or
        # (drafters write it so) a pin of the case cited before the record cite; the packet
        # decides (checks), so it stays a case's Id. that carries the record it may be.
        return RecordCite("case_citation", at, end, bates, tuple(pins), None, None, cited_as)
    return RecordCite(
        "record_cite", at, end, bates, tuple(pins), antecedent.exhibit, antecedent.title, cited_as
    )


def _name_pin(match: re.Match[str]) -> str:
    """The pin of a name cite, as `_pin_text` writes pins ("at 3", "¶ 4", "¶¶ 4-6")."""
    if match.group("para") is not None:
        return match.group("marks") + " " + re.sub(r"\s+", "", match.group("para"))
    return "at " + re.sub(r"\s+", "", match.group("pin"))


ROW_CHARS = 2000  # a table's row is read this far on either side of a cell
# A term the draft defines for a document: 'Interim Report No. 2 ("IR-2")', 'the Subcontract
# ("Subcontract")': the quoted short name in parentheses, and the capitalised run of words
# just before it that it names.
DEFINITION = (
    r"\((?:the[ \t]+|a[ \t]+|collectively,?[ \t]+)?[\"\u201c]"
    r"(?P<short>[^\"\u201c\u201d()\n]{1,60})[\"\u201d]\)"
)
_DEFINITION = re.compile(DEFINITION)
_DEFINED_WORD = re.compile(r"(?:[A-Z0-9][\w.'\u2019&-]*|of|and|for|to|on|the)$")
DEFINED_WORDS = 8  # the longest name a definition is read back over
_ITEM_NUMBER = re.compile(r"\d{1,3}[.)]$")


def defined_terms(text: str) -> dict[str, str]:
    """The draft's short names for what it defines ("IR-2" -> "Interim Report No. 2"), each
    with the capitalised words just before its definition (small words between them kept)."""
    found: dict[str, str] = {}
    if '("' not in text and "(\u201c" not in text and '(the "' not in text:
        return found
    for match in _DEFINITION.finditer(text):
        before = text[max(0, match.start() - 120) : match.start()].splitlines()[-1:]
        words = before[0].split() if before else []
        taken: list[str] = []
        for word in reversed(words[-DEFINED_WORDS:]):
            if not _DEFINED_WORD.match(word) or word.endswith(",") or _ITEM_NUMBER.match(word):
                break  # (nor a paragraph's number, "60.")
            taken.insert(0, word)
        while taken and not taken[0][:1].isupper() and not taken[0][:1].isdigit():
            taken.pop(0)  # a name starts with a capital or a number
        short = match.group("short").strip()
        if taken and short not in found:
            found[short] = " ".join(taken)
    return found


_FORM_NAME = re.compile(r"\d{1,3}-[A-Z]|[A-Z]-\d{1,2}")  # "10-K", "S-1": a filing's form


# An item of an index of record by its letters and number, as Arizona's briefs cite the
# superior court's ("IR 31 at 2"): a name, which the checks look for among the documents' names
# and first lines.
_ITEM_NAME = re.compile(r"[A-Z]{2,3} \d{1,4}")


def _names_a_document(name: str) -> bool:
    """Whether `name` reads as a document's name or title: one to six words in title case, a
    word of three letters or more among them, no case or statute form."""
    words = name.split()
    if not 1 <= len(words) <= 6 or _NOT_A_NAME.search(name) or LEGAL_UNIT_FIRST.match(name):
        return False
    if _ITEM_NAME.fullmatch(name):
        return True  # "IR 31 at 2": an index's item, which its document may print or be named
    if not any(
        (sum(c.isalpha() for c in w) >= 3 and not w.endswith(".")) or _FORM_NAME.fullmatch(w)
        for w in words
    ):
        return False  # "R. at 5", "J.A. at 12": a record's abbreviations (but "2022 10-K")
    return all(
        w.lower() in TITLE_SMALL_WORDS or not w[:1].isalpha() or w[:1].isupper() for w in words
    )


def document_name_cite(piece: str) -> tuple[str, str] | None:
    """The name and the pin of a cite naming a document with a page ("Discharge Summary at 1",
    "See Voss Letter, p. 2"), as the extractor reads one where a cite belongs, or None. The
    checks use it for a piece read as a reference to the system's own work by its words
    ("summary"), which names a packet document all the same."""
    text = piece.strip()
    signal = SIGNAL.match(text)
    if signal is not None:
        text = text[signal.end() :]
    match = _PLAIN_NAME.fullmatch(text)
    if match is None or not _names_a_document(match.group("name")):
        return None
    return match.group("name").strip(), _name_pin(match)


# A sentence that is a document's name with a page and nothing else: at a line's start or after
# a sentence's end, closed by a stop at the line's or the text's end or before the next sentence.
_BARE_NAME_SENTENCE = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=[.!?][\"\u201d)]\s))[ \t]*(?P<cite>[A-Z][^.;:()\n\"\u201c]{1,80}?"
    + _NAME_PIN
    + r")\.(?=\s|$)",
    re.MULTILINE,
)
# A short code of letters and a number ("MW-7", "SB-9") is a cite only after a signal that
# closes its sentence ("*See* MW-7."): a parenthetical may name a thing so ("the well (MW-7)").
_SIGNAL_BEFORE = re.compile(r"(?:[Ss]ee(?:,?\s+also)?|[Cc]f\.|[Cc]iting)[*_]{0,2}[,:]?\s+$")
_SHORT_CODE = re.compile(r"[A-Z]{1,4}-\d{1,3}[A-Za-z]?")
# A citation sentence that is a part's label alone ("... withheld in full. Table 2."), read as
# a part of a brief where it is one of the draft's own parts (`names_a_brief_part`).
_PART_SENTENCE = re.compile(
    r"(?:(?<=[.!?][ \t])|(?<=[.!?][\"\u201d)][ \t]))(?P<part>[A-Z][a-z]{2,9}\.?[ \t]+"
    r"(?:[IVXLC]{1,6}|\d{1,3}|[A-Z])(?:\.[A-Z0-9]{1,3})*(?:,?[ \t]+(?:supra|infra))?)"
    r"(?=\.(?:\s|$))"
)
_NUMBER_LABEL_BEFORE = re.compile(r"\b(?:[Nn]os?|NOS?|[Nn]r|[Nn]um)\.[ \t]$")
# What a number is, in small letters before its "no.": "file no.", "claim no.", "policy no."
_NUMBER_KINDS = (
    r"(?:file|case|claim|policy|account|acct\.|loan|invoice|order|ticket|matter|project|job"
    r"|report|serial|reference|ref\.|docket|control|tracking|confirmation)"
)
_CITE_POSITION = re.compile(
    # A parenthetical, or what follows a signal (its emphasis, "*See*", no part of it), within a
    # paragraph (soft line breaks allowed), or one token standing as a sentence of its own
    # after another ("... from her phone. ELL-IPH-0007.").
    r"\((?P<paren>(?:[^()\n]|\n(?![ \t]*\n)){1,200})\)"
    # ("per" only where a clause opens: "price per dozen" is a rate, no signal)
    r"|(?:(?<=\W)|^)(?:[Ss]ee(?:,?\s+also)?|[Cc]f\.|[Cc]iting|(?:(?<=[(;,][ \t])|(?<=\()|^)[Pp]er)"
    r"[*_]{0,2}[,:]?\s+"
    # (a number's label does not end it: "See Receipt No. ZLA2291784302."; a table's cell
    # ends it)
    # (nor a party's or a brief's abbreviation: "See Pl.'s Mot., Table 1.")
    r"(?P<see>(?:[^.;:()\n|]|(?:(?<=\bNo)|(?<=\bNos)|(?<=\bAcct)|(?<=\bCert))\.(?=[ \t]+\w)"
    r"|(?:(?<=\bPl)|(?<=\bPls)|(?<=\bDef)|(?<=\bDefs)|(?<=\bMot)|(?<=\bMem)|(?<=\bBr))"
    r"\.(?=['\u2019]s?[ \t]+\w|,?[ \t]+\w)"
    r"|\n(?![ \t]*\n)){1,120})"
    r"|(?:(?<=[.!?][ \t])|(?<=[.!?][\"\u201d)][ \t]))"
    # (also a number with its label, "Claim No. PAL-23-0118842.", "Policy No. PMF-7741902-03,
    # CP 10 30 § B.1.", and a label of a prefix, a space and digits, "PALISADE 000234.")
    # (a name's words capitalised, or a number's kind in small letters: "Pelican file no. ...")
    r"(?P<alone>[A-Z][\w'\u2019&-]*\.?[ \t]+(?:(?:[A-Z][\w'\u2019&-]*\.?|" + _NUMBER_KINDS + r")"
    r"[ \t]+){0,2}[Nn]o\.[ \t]*[A-Za-z0-9][\w/:-]*"
    r"(?:\.[\w/:-]+)*(?:,\d{3}(?!\d))*"  # (a number grouped by commas: "Appl. No. 15/873,204")
    r"(?:[ \t]+at[ \t]+\d{1,4}(?:[-\u2013]\d{1,4})?)?"  # (and its page: "... 62/447,915 at 6")
    r"|[A-Z]{2,12}[ \t]\d{3,12}|\d{1,3}-[A-Z]{1,5}-\d{1,8}"  # (and "3-ER-512": a volume's)
    r"|(?:[PDJGCR]|[PDJ]T)X[ \t-]?\d{1,4}"  # (a party's exhibit alone: "JX 52.")
    # (a word and a code with a digit, "Batch PR-2023-0018.": what the code names)
    r"|[A-Z][a-z]{2,12}[ \t]+(?=[\w/:-]*\d)[A-Z0-9][\w/:-]{3,40}"
    r"|[A-Za-z][\w.:/-]{3,60}?)"
    r"(?=\.(?:\s|$)|,[ \t][^\n]{1,40}?\.(?:\s|$))"
)


@dataclass
class RecordCite:
    kind: Kind
    start: int
    end: int
    bates: tuple[BatesRef, ...] = ()
    pins: tuple[str, ...] = ()
    exhibit: str | None = None  # "Ex. 3 at 2": "3" (see Claim.exhibit)
    title: str | None = None  # "Subcontract at 3": "Subcontract" (see Claim.title)
    cited_as: str | None = None  # an Id.'s record cite as written (see Claim.cited_as)


def _pin_text(match: re.Match[str]) -> str:
    def bare(group: str) -> str:
        return re.sub(r"\s+", "", match.group(group))

    if match.group("para"):
        marks = "¶¶" if match.group("para") in ("¶¶", "paras.", "paragraphs") else "¶"
        return f"{marks} {bare('pn')}"
    if match.group("at"):
        return f"at {bare('at')}"
    if match.group("pp"):
        return f"{match.group('pp')} {bare('pg')}"
    if match.group("tr"):
        return bare("tr")
    return f":{bare('line')}"


# After an exhibit's label, a pin written after a comma alone, as the Patent Trial and Appeal
# Board's papers cite ("Ex. 1001, 6:13-17", "Ex. 1005, 214"); never a year ("Ex. 3, 2019").
_COMMA_PIN = re.compile(
    r",[ \t]+(?P<pin>\d{1,4}:\d{1,3}(?:[ \t]*[-\u2013][ \t]*\d{1,4}(?::\d{1,3})?)?"
    r"|(?!(?:19|20)\d\d\b)\d{1,4}(?:[ \t]*[-\u2013][ \t]*\d{1,4})?)(?![\w:.,]\d|[\w%])"
)


_COVER_PIN = re.compile(r",[ \t]+cover(?:[ \t]+page)?\b", re.IGNORECASE)


def _exhibit_pins_after(text: str, end: int) -> tuple[int, list[str]]:
    """The pins after an exhibit's label: those of any cite, else one after a comma."""
    found_end, pins = _pins_after(text, end)
    if pins:
        return found_end, pins
    comma = _COMMA_PIN.match(text, end)
    if comma is None:
        cover = _COVER_PIN.match(text, end)  # "Ex. 1004, cover": a patent's first page
        return (cover.end(), ["at 1"]) if cover is not None else (end, pins)
    pin = re.sub(r"[ \t]+", "", comma.group("pin"))
    return comma.end(), [f"at {pin}"]


def _pins_after(text: str, end: int) -> tuple[int, list[str]]:
    pins: list[str] = []
    while True:
        match = _PIN.match(text, end)
        if match is None:
            return end, pins
        pins.append(_pin_text(match))
        end = match.end()


_SEPARATORS = "-_. \u00a0"
_COMMA_PAGE = r",[ \t]+pp?\.[ \t]?"
_COMMA_PAGE_END = re.compile(_COMMA_PAGE + "$")
_DOCKETED_PREFIX = re.compile(r"(?P<letters>[A-Za-z]{2,10})[-_. ]\d{1,4}-\d{1,6}")
_DOTTED_LETTERS = 5  # "A.R.", "S.E.C.": longer runs of dotted capitals are not a prefix
_DOTS = re.compile(r"[. \u00a0]")


# A label wrapped at a line end ("KTR-\n0012345"): the break is no part of it.
_LABEL_BREAK = r"[-_.]?[ \t]*\n[ \t]*"
_LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*")


def _bates_pattern(prefixes: Sequence[str]) -> tuple[re.Pattern[str], dict[str, str]] | None:
    """A pattern for the labels of `prefixes`, and the prefix each written form stands for.

    A drafter may drop or change the separator a prefix ends with ("ZEN0000014", "ZEN 0000014"
    for the prefix "ZEN-"): the label is the case's, written loosely.
    """
    canonical: dict[str, str] = {}
    for prefix in sorted({p for p in prefixes if p}, key=len):
        core = prefix.rstrip(_SEPARATORS) or prefix
        canonical.setdefault(core, prefix)
        canonical[prefix] = prefix
        # (a prefix carrying the appeal's docket number, "ROA.24-20317.", is cited with the
        # number left out, "ROA.512", as the Fifth Circuit lets a brief cite its record)
        docketed = _DOCKETED_PREFIX.fullmatch(core)
        if docketed is not None:
            canonical.setdefault(docketed.group("letters"), prefix)
    if not canonical:
        return None
    cores = sorted({p.rstrip(_SEPARATORS) or p for p in canonical}, key=len, reverse=True)
    # A prefix of letters may be written as an abbreviation, a period after each letter
    # ("A.R. 215", "A. R. 215" for "AR 000215": the administrative record's own style).
    # (a production of one letter, the record "R" or the transcript "T", is cited "R. 22",
    # "T. 9:6-10", as Florida's appellate records are)
    dotted = [
        r"\.[ \u00a0]?".join(map(re.escape, p)) + r"\."
        for p in cores
        if p.isalpha() and 1 <= len(p) <= _DOTTED_LETTERS
    ]
    # (a prefix stamped with its own stops and space, "R.A. 101", as written whole too)
    spelled = sorted((p for p in canonical if p not in cores and p.strip() != p), key=len)
    alternation = "|".join(
        [*dotted, *(re.escape(p) for p in reversed(spelled)), *(re.escape(p) for p in cores)]
    )
    pattern = re.compile(
        # (or a comma and the page's "p.": Colorado's "CF, p. 213", "CF, pp. 235-38")
        rf"(?<![A-Za-z0-9])(?P<prefix>(?:{alternation})"
        rf"(?:{_LABEL_BREAK}|{_COMMA_PAGE}|[-_. \u00a0])?)"
        # (a volume before its page, "R.A. II:34": a record appendix numbered through its
        # volumes, as Massachusetts cites it; the page is the production's number)
        r"(?:(?P<volume>[IVX]{1,5}):[ \t]?)?"
        # (a number of one or two digits after a separator: a production numbered unpadded,
        # as the Ninth Circuit's excerpts of record are, "2-ER-22"; see `_bates_cites`)
        # (or right after the prefix's letters: an appendix numbered unpadded, "Da12", "B35",
        # where a cite stands alone; see `_bates_cites`)
        # (never a date's first number: "TR 3/5/24" is a transcript's day, not page 3)
        rf"(?P<num>\d{{3,12}}|(?:(?<=[- \u00a0:])|(?<=[A-Za-z]))\d{{1,2}}(?!,\d|\.\d(?!\d)))"
        rf"(?!\d|/\d){_PAGE_SUFFIX}"
    )
    return pattern, canonical


def _word_prefix_pattern(
    prefixes: Sequence[str],
) -> tuple[re.Pattern[str], dict[str, str]] | None:
    """A production whose prefix is a word's letters, cited as that word's abbreviation and
    the page's number ("App. 45", "App. 45-46" for "APP045": an appendix stamped so, as Texas
    practice cites its summary-judgment appendix). Not after another abbreviation ("Or. App.
    512", "Tex. App.": a reporter's or a court's), nor before a word ("App. 4th")."""
    canonical: dict[str, str] = {}
    for prefix in prefixes:
        core = prefix.rstrip(_SEPARATORS)
        if core.isalpha() and core.isupper() and 3 <= len(core) <= _DOTTED_LETTERS:
            canonical[core.capitalize()] = prefix
    if not canonical:
        return None
    words = "|".join(re.escape(w) for w in sorted(canonical, key=len, reverse=True))
    pattern = re.compile(
        rf"(?<![A-Za-z]\.[ ])(?<![A-Za-z]\.)(?<![\w.])(?P<prefix>(?:{words})\.[ \u00a0]?)"
        r"(?P<num>\d{1,12})(?![\w.]*[A-Za-z])(?!\d)"
        # (nor a year closing a case's parenthetical: Arizona's Court of Appeals, "(App. 2020)")
        r"(?!(?<=\D(?:19|20)\d\d)\))(?P<page>(?!))?"
    )
    return pattern, {**canonical, **{f"{w}.": p for w, p in canonical.items()}}


# The record's own designations: a production stamped as the administrative record ("AR"), the
# certified administrative record ("CAR"), the transcript ("TR") or the record on appeal
# ("ROA") is cited as the transcript or the record by page ("(Tr. 17)", "R. 27", "Tr.
# 25:3-5"), as Social Security and agency appeals cite their certified record. (A prefix "R"
# alone is as often a respondent's exhibits as the record: it names no record.)
_RECORD_PREFIXES = frozenset({"AR", "CAR", "TR", "ROA"})
_RECORD_WORDS = ("Tr", "R", "T")  # ("T. 123": Minnesota's transcript, Minn. R. Civ. App. P. 128.03)
# ... where such a cite begins: after a parenthesis, a bracket, a semicolon or a comma, a
# signal, or a sentence's end, never after another word ("Hr'g Tr. 215", "Fed. R. 56").
_CITE_START = (
    r"(?:^|(?<=[(\[;,\n])|(?<=[(\[;,.][ ])|(?<=[.][ ][ ])|(?<=[Ss]ee[ ])|(?<=[Cc]f\.[ ])"
    r"|(?<=also[ ]))"
)
# Where an unpadded appendix page standing alone begins ("(Da12)", "; B35", "A31." as a
# citation sentence, "JX 33 at B38").
_UNPADDED_START = re.compile(rf"(?:{_CITE_START}|(?<=\bat[ ]))")


def _record_word_pattern(
    prefixes: Sequence[str],
) -> tuple[re.Pattern[str], dict[str, str]] | None:
    """The case's one production stamped as its record (`_RECORD_PREFIXES`), cited by the
    record's words (`_RECORD_WORDS`), none of which is the prefix of another production."""
    records = [p for p in prefixes if p.rstrip(_SEPARATORS).replace(".", "") in _RECORD_PREFIXES]
    cores = {p.rstrip(_SEPARATORS).replace(".", "").upper() for p in prefixes}
    words = [w for w in _RECORD_WORDS if w.upper() not in cores]
    if len(set(records)) != 1 or not words:
        return None
    alternation = "|".join(words)
    pattern = re.compile(
        rf"{_CITE_START}(?P<prefix>(?:{alternation})\.[ \u00a0]?)"
        # ("R. 4:50-1" is a court rule: the record's "R." takes no page and line)
        r"(?P<num>\d{1,12})(?![\w.]*[A-Za-z])(?!\d)(?<!R\.[ ]\d)(?P<page>(?!))?",
        re.MULTILINE,
    )
    return pattern, {form: records[0] for w in words for form in (w, f"{w}.")}


@dataclass(frozen=True)
class _RangeEnd:
    end: int
    last: int
    last_page: int | None
    page_digits: int


def _range_end(text: str, end: int, prefix: str, num: str, page: str | None) -> _RangeEnd | None:
    """Where a range continues at `end` ("-16", " - ACME000016", " through ..."), and its last
    number and page. After a suffixed number ("ABC000101.0002") the range may run over its
    document's pages: "-.0004", "-0004" (no longer than the suffix) or "-ABC000101.0004"."""
    core = re.escape(prefix.rstrip(_SEPARATORS) or prefix)
    match = re.compile(
        r"\s*(?:[-\u2013\u2014]|\s(?:through|thru|to)\s)\s*"
        r"(?:\.(?P<dot>\d{1,6})"
        rf"|(?:(?P<p>{core})[-_. \u00a0]?)?(?P<n>\d{{1,12}})(?:\.(?P<s>\d{{1,6}}))?)(?!\d)"
    ).match(text, end)
    if match is None:
        return None
    first = int(num)
    first_page = int(page) if page is not None else None
    width = len(page or "")
    last_page: int | None
    if match.group("dot") is not None:
        if page is None:
            return None  # "ACME000014-.5" is no range of pages
        last, last_page, width = first, int(match.group("dot")), len(match.group("dot"))
    else:
        tail = match.group("n")
        worded = re.match(r"\s*\s(?:through|thru|to)\s", match.group())
        if (
            match.group("p") is None
            and worded
            and len(tail) != len(num)
            and (page is None or len(tail) > len(page))
        ):
            return None  # "ACME000014 to 16 pages" is no range
        suffix = match.group("s")
        if (
            match.group("p") is None
            and page is not None
            and suffix is None
            and len(tail) <= len(page)
        ):
            last, last_page, width = first, int(tail), len(tail)  # "ABC000101.0002-0004"
        else:
            last = int(tail) if len(tail) >= len(num) else int(num[: len(num) - len(tail)] + tail)
            last_page = int(suffix) if suffix is not None else None
            width = len(suffix) if suffix is not None else width
    if (last, last_page or 0) < (first, first_page or 0) or (
        last == first and last_page is not None and first_page is None
    ):
        return None
    return _RangeEnd(match.end(), last, last_page, width)


# A reproduced record numbers its pages with a small letter after the number ("258a"; "12b" for
# a supplemental one, Pa.R.A.P. 2173), cited "R.R. 258a-59a": the letter is no part of the
# number, and a range's end carries it too.
_LINES_ONTO = re.compile(
    r":\d+[-\u2013](?P<page>\d+):\d+"
)  # a Bates page's lines onto a later page
_LETTERED_PAGE = re.compile(r"[ab](?![\w])")


def _bates_cites(
    text: str,
    pattern: re.Pattern[str],
    kind: Kind,
    blocked: Spans,
    canonical: dict[str, str] | None = None,
    *,
    padded: bool = False,
) -> list[RecordCite]:
    """The cites `pattern` finds; with `padded`, a number of fewer than three digits only
    for a prefix stamped with its separator ("ER-", "AR "), which may number its pages
    unpadded ("ER-7")."""
    cites: list[RecordCite] = []
    for match in pattern.finditer(text):
        start, end = match.span()
        if blocked.overlaps(start, end):
            continue
        if cites and start < cites[-1].end:
            continue
        prefix, num = match.group("prefix"), match.group("num")
        if canonical is not None:
            written = _LINE_BREAK.sub("", _COMMA_PAGE_END.sub("", prefix)).replace("\u00a0", " ")
            prefix = (
                canonical.get(written)
                or canonical.get(written.rstrip(_SEPARATORS) or written)
                or canonical[_DOTS.sub("", written)]
            )
        written_prefix = match.group("prefix")
        # (an appendix numbered unpadded, its page right after the prefix's letters: "Da12",
        # "B35", where a cite stands alone, checked once its range and pins are read)
        unpadded = len(num) < 3 and written_prefix[-1:].isalpha()
        if (
            padded
            and len(num) < 3
            and prefix[-1:] not in ("-", " ", "\u00a0")
            # (a record's own designation of two or three letters written apart from its
            # number, "RA 31", "R.A. II:34": a record appendix's page cited unpadded, as its
            # foot prints it, "R.A. 031"; a producing party's "ACME 12" is none)
            and not (written_prefix[-1:].isspace() and len(prefix.rstrip(_SEPARATORS)) <= 3)
            and not unpadded
        ):
            continue
        page = match.group("page")
        first = last = int(num)
        first_page = last_page = int(page) if page is not None else None
        width = len(page or "")
        lettered = _LETTERED_PAGE.match(text, end)
        end = lettered.end() if lettered is not None else end
        ranged = _range_end(text, end, prefix, num, page)
        if ranged is not None:
            end, last, last_page, width = (
                ranged.end,
                ranged.last,
                ranged.last_page,
                ranged.page_digits,
            )
            tail = _LETTERED_PAGE.match(text, end) if lettered is not None else None
            end = tail.end() if tail is not None else end
        end, pins = _pins_after(text, end)
        if unpadded and not (
            _UNPADDED_START.match(text, start)
            and (text.startswith(")", end) or _CLAUSE_END.match(text, end))
        ):
            continue  # "Class A1 notes", "vitamin B12": no appendix page in a cite's place
        onto = next((m for pin in pins if (m := _LINES_ONTO.fullmatch(pin))), None)
        if onto is not None and ranged is None and 0 < int(onto.group("page")) - first <= 5:
            last = int(onto.group("page"))  # "RR 106:21-107:12": pages 106-107
        exhibit = _EXHIBIT_BEFORE.search(text, max(0, start - 40), start)
        number = None
        if exhibit is not None:
            start = exhibit.start()
            # "Ex. 3 at ACME000022": the page must be one of exhibit 3's (checks).
            named = _EXHIBIT_NUMBER.match(text, start, exhibit.end())
            number = named.group("n") if named is not None else None
        ref = BatesRef(prefix, first, last, len(num), first_page, last_page, width)
        cites.append(RecordCite(kind, start, end, (ref,), tuple(pins), number))
    return cites


_AT_POSITION = re.compile(r"(?:(?<=\s)|^)(?:at|Ex\.)[ \t]+(?=(?P<token>[^\s()\[\]]{2,80}))")
_OPENING = re.compile(r"\)?[ \t]*(?:\.[ \t]+)?\(")  # also a citation sentence right after
_CLAUSE_END = re.compile(r"\)?[\"'\u201d\u2019\]]*\s*(?:[.;,:!?]|\(|$|\n)")


# A volume, a reporter and a page ("68 Cal.App.5th at 415", "512 F. Supp. 3d 1044"): a case
# citation, full or short, which the case citations' extractor reads (a reporter's dotted
# abbreviation is no code of a thing).
_REPORTER_PAGE = re.compile(
    r"(?<![\w.])\d{1,4}\s+[A-Z][\w.']*(?:\s[A-Z0-9][\w.']*){0,4}?\s+(?:at\s+(?:pp?\.\s*)?)?"
    r"\d{1,5}(?![\w:])"
)
_SENTENCE_ENDED = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s*$")


def _closes_clause(text: str, end: int, start: int | None = None) -> bool:
    """Whether a cite position ending at `end` (a parenthetical's content, or what follows a
    signal) closes its clause: punctuation, another parenthetical or the line's end follows,
    not more words of the sentence (a descriptive "the unit (model XR-200) failed"). A
    parenthetical starting at `start` that is a citation sentence of its own, after its
    sentence's stop and with a stop of its own ("... a work order. (HBR-WO-5517.) Tidewater
    ...", as the California Style Manual writes every cite), closes the sentence before it,
    whatever follows."""
    if _CLAUSE_END.match(text, end) is not None:
        return True
    return (
        start is not None
        and text[start - 1 : start] == "("
        and text[end - 1 : end] == "."
        and _SENTENCE_ENDED.search(text[max(0, start - 12) : start - 1]) is not None
    )


# (also a table's or a figure's caption set wholly in bold: "**Table R-1. Large White
# (15-dozen case), price schedules**"; a sentence set in bold keeps its cites)
_HEADING = re.compile(
    r"[ \t]{0,3}(?:#{1,6}[ \t]|(?:\*\*|__)(?:Table|Figure|Fig\.|Chart|Schedule)[ \t]"
    r"[^\n]*?(?:\*\*|__)[ \t]*(?:\n|$)"
    # (a title in bold capitals with a note on it: "**APPELLANT'S OPENING BRIEF** (working
    # draft 4, not for filing)")
    r"|(?:\*\*|__)[^a-z\n*_]{3,120}(?:\*\*|__)[ \t]*\([^()\n]{1,120}\)[ \t]*(?:\n|$))"
)


def _in_heading(text: str, at: int) -> bool:
    """Whether `at` is on a Markdown heading line ("# Smith v. Jones (No. 23CV41877)"): a
    heading names the draft or its part and states no fact, so nothing in it is used as a
    cite."""
    return _HEADING.match(text, text.rfind("\n", 0, at) + 1) is not None


# The lines that open a signature block: "Respectfully submitted," or an "/s/" signature.
SIGNATURE_CHARS = 600  # a signature block's paragraph is shorter (a longer one is read so)
# (the USPTO's electronic signature is the signer's name between slashes: "/Priya Raman-Holt/")
_SIGNATURE_OPENING = re.compile(
    r"(?m)^[ \t>*_]*(?:By:?[ \t]*)?(?:/s/|Respectfully submitted\b|/[A-Z][^/\n]{1,60}/[ \t]*$)"
)


def _in_signature(text: str, at: int) -> bool:
    """Whether `at` is in a signature block: the paragraph that opens with "/s/" ("By: /s/")
    or "Respectfully submitted," (the signer's name, bar number, firm and address). It states no
    fact, so nothing in it is used as a cite ("Miriam T. Aldous (BBO No. 671204)")."""
    window = max(0, at - SIGNATURE_CHARS)
    paragraph = text.rfind("\n\n", window, at)
    if paragraph < 0 and window > 0:
        return False  # a paragraph this long is no signature block
    return _SIGNATURE_OPENING.match(text, paragraph + 2 if paragraph >= 0 else 0) is not None


# A line holding only a person's name before a parenthetical: "Lucia Marchetti (", "Miriam T.
# Aldous (" (a caption's or a signature's attorney, whose bar number the parenthetical gives).
_NAME_WORD = r"(?:[A-Z][a-z'\u2019-]+(?:-[A-Z][a-z'\u2019]+)?|[A-Z]\.)"  # ("Raman-Holt")
_NAME_ALONE = re.compile(rf"[ \t>*_]*{_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{1,3}}[ \t]*\($")


_ROLE_AFTER = re.compile(r",[ \t]*[A-Z][^.\n()]{0,80}")
_CAPTION_NUMBER = re.compile(
    r"[ \t]*(?:(?:Case|Docket|Appeal|Appellate)[ \t]+)?No\.[ \t]*\S{1,30}[ \t]*\("
)


def _after_a_name_alone(text: str, start: int, end: int) -> bool:
    """Whether the parenthetical whose content is `text[start:end]` stands on a line of its own
    after a person's name ("Lucia Marchetti (SBN 281946)"): it identifies the person; no
    sentence is on the line for it to cite for."""
    line_start = text.rfind("\n", max(0, start - 60), start) + 1
    if line_start == 0 and start > 60:
        return False
    line_end = text.find("\n", end)
    rest = text[end + 1 : len(text) if line_end < 0 else line_end].rstrip()
    # (the line may go on with the person's role: "Hannah L. Cheng (SBN 298311), Attorney for
    # Appellant"; or be a caption's number: "No. C0_____ (related appeal No. C097236)")
    if rest and not _ROLE_AFTER.fullmatch(rest):
        return False
    return (
        _NAME_ALONE.fullmatch(text, line_start, start) is not None
        or _CAPTION_NUMBER.fullmatch(text, line_start, start) is not None
    )


# Digits in hyphenated groups ("4500-1219", "24-046-003412"): an order's, an incident's or an
# account's number where a page range cannot be read (three groups or more, or a second group
# that would end the range before it starts), nor a date (groups of 4-2-2 or 2-2-2/4 digits).
_DIGITS_JOINED = re.compile(r"\d{2,}(?:-\d{2,}){1,3}")
_DATE_GROUPS = {(4, 2, 2), (2, 2, 4), (2, 2, 2)}


def _a_numbers_id(piece: str) -> bool:
    """Whether `piece` is a thing's number of digits in groups (see `_DIGITS_JOINED`)."""
    if not _DIGITS_JOINED.fullmatch(piece):
        return False
    groups = piece.split("-")
    if len(groups) > 2:
        return tuple(len(g) for g in groups) not in _DATE_GROUPS
    first, last = groups
    end = int(first[: len(first) - len(last)] + last) if len(last) < len(first) else int(last)
    return end <= int(first)


def _cite_pieces(text: str, positions: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pieces of the cite positions that close their clause, split at semicolons, trimmed,
    a signal taken off ("See Voss Letter at 2" -> "Voss Letter at 2")."""
    pieces = []
    for p_start, p_end in positions:
        if not _closes_clause(text, p_end, p_start):
            continue
        for part in re.finditer(r"[^;]+", text[p_start:p_end]):
            a, b = trim(text, p_start + part.start(), p_start + part.end())
            signal = SIGNAL.match(text[a:b])
            if signal is not None:
                a += signal.end()
            if b > a:
                pieces.append((a, b))
    return pieces


def _quoted_names(
    text: str, pieces: Sequence[tuple[int, int]], quotes: Sequence[Quote]
) -> tuple[list[RecordCite], list[Quote]]:
    """Cites naming a document by a quoted name with a pin ('"site-log.pdf" at 2'): the
    quotation marks are part of the cite, so the quote is none. Returns the cites and the
    quotes left."""
    by_start = {q.start - 1: q for q in quotes if not q.block}  # at the opening mark
    cites: list[RecordCite] = []
    used: set[int] = set()
    for a, b in pieces:
        match = _QUOTED_NAME.fullmatch(text, a, b)
        quote = by_start.get(a)
        if match is None or quote is None or quote.end != match.end("name"):
            continue
        name = match.group("name").strip()
        if is_generated(name):
            continue
        pin = _name_pin(match)
        cites.append(RecordCite("record_cite", a, b, (), (pin,), title=name))
        used.add(quote.start)
    return cites, [q for q in quotes if q.start not in used]


def record_cites(
    text: str, prefixes: Sequence[str], quotes: Sequence[Quote]
) -> tuple[list[RecordCite], list[Quote]]:
    """The record cites of `text`, and the quotations that are no part of one (a quoted
    document name in a cite is the cite's)."""
    positions = [
        (m.start(g), m.end(g))
        for m in _CITE_POSITION.finditer(text)
        for g in ("paren", "see", "alone")
        if m.group(g) is not None
        and not _in_heading(text, m.start(g))
        and not _in_signature(text, m.start(g))
        and not (g == "paren" and _after_a_name_alone(text, m.start(g), m.end(g)))
        # "Group Policy No. GLT-0047719.": the stop of a number's label ends no sentence.
        and not (
            g == "alone" and _NUMBER_LABEL_BEFORE.search(text, max(0, m.start(g) - 6), m.start(g))
        )
    ]
    defined = defined_terms(text)  # the draft's own names for documents, "IR-2"
    own_parts = own_part_labels(text)  # its own headings' and captions' labels, "table 1"
    own_party = drafters_party(text)  # the party its title names: its own briefs are its work
    named, quotes = _quoted_names(text, _cite_pieces(text, positions), quotes)
    blocked = Spans([(q.start, q.end) for q in quotes] + [(c.start, c.end) for c in named])
    known = _bates_pattern(prefixes)
    cites = (
        _bates_cites(text, known[0], "record_cite", blocked, known[1], padded=True)
        if known is not None
        else []
    )
    for worded in (_word_prefix_pattern(prefixes), _record_word_pattern(prefixes)):
        if worded is None:
            continue
        # "App. 45" for "APP045", "Tr. 17" for "AR 017": taken after the labels written as
        # labels.
        written = Spans([(c.start, c.end) for c in cites])
        for cite in _bates_cites(text, worded[0], "record_cite", blocked, worded[1]):
            if not written.overlaps(cite.start, cite.end):
                cites.append(cite)
        cites.sort(key=lambda c: c.start)
    cites.extend(named)
    taken = Spans([(q.start, q.end) for q in quotes] + [(c.start, c.end) for c in cites])

    def free(start: int, end: int) -> bool:
        return not taken.overlaps(start, end)

    def add(cite: RecordCite) -> None:
        cites.append(cite)
        taken.add(cite.start, cite.end)

    in_positions = Spans(positions)
    # This case's numbers carry letters: a number of digits alone is none of them.
    lettered = bool(prefixes) and all(re.search(r"[A-Za-z]", p) for p in prefixes)
    # Where a cite closes its clause; a descriptive parenthetical ("the unit (model XR-200)
    # failed") holds a label that names a thing, not a source.
    # What follows a signal and is itself followed by a record cite of this case ("per
    # Revision 3 of SD-CW-204 (HSW-000220.0001)") names what that cite shows: no cite.
    sourced = Spans([(c.start, c.end) for c in cites])

    def before_a_cite(end: int) -> bool:
        opening = _OPENING.match(text, end)
        if opening is None:
            return _row_before_a_cite(end)
        close = text.find(")", opening.end())
        return close > 0 and sourced.overlaps(opening.end(), close)

    def _row_before_a_cite(end: int) -> bool:
        # A table's row that gives a record cite of this case in a later cell ("| Proof of
        # Claim (Claim No. 1473) | GRT-PREF-01471-01472 |"): the cells before it say what the
        # cited pages are.
        window = max(0, end - ROW_CHARS)
        line_start = text.rfind("\n", window, end)
        line_start = window if line_start < 0 else line_start + 1
        if not text[line_start:end].lstrip().startswith("|"):
            return False
        line_end = text.find("\n", end, end + ROW_CHARS)
        line_end = min(len(text), end + ROW_CHARS) if line_end < 0 else line_end
        cell_end = text.find("|", end, line_end)
        return cell_end >= 0 and sourced.overlaps(cell_end, line_end)

    closing = Spans(
        [p for p in positions if _closes_clause(text, p[1], p[0]) and not before_a_cite(p[1])]
    )

    # Labels of no known prefix: with known prefixes, such a label where a record cite belongs is
    # not one of this case's record cites; without any, a long zero-padded label is taken as one.
    for cite in _bates_cites(text, _GENERIC, "record_cite", blocked):
        ref = cite.bates[0]
        if not free(cite.start, cite.end) or FISCAL_YEAR.fullmatch(text[cite.start : cite.end]):
            continue
        goes_on = _CODE_GOES_ON.match(text, cite.end) if known is not None else None
        if goes_on is not None:
            cite = replace(cite, end=goes_on.end())  # "PR-2023-0018": the whole code
        in_position = in_positions.covers(cite.start, cite.end)
        if known is None and (in_position or ref.digits >= 6):
            add(cite)
        elif known is not None and closing.covers(cite.start, cite.end):
            add(RecordCite("not_a_record_cite", cite.start, cite.end, (), cite.pins))

    def by_pages(pattern: re.Pattern[str]) -> None:
        """The cites of a pattern whose `pages` group is the pin ("14 TTABVUE 6", "HT 112")."""
        for match in pattern.finditer(text):
            if free(match.start(), match.end()):
                pin = "at " + re.sub(r"\s+", "", match.group("pages"))
                add(RecordCite("record_cite", match.start(), match.end(), (), (pin,)))

    def by_pins_or_page(pattern: re.Pattern[str]) -> None:
        """The cites of a pattern pinned after it, or by a bare page ("RP (Mar. 5, 2024) 44",
        "N.T. 3/14/23, 112-13")."""
        for match in pattern.finditer(text):
            end, pins = _pins_after(text, match.end())
            if not pins:
                page = _BARE_PAGE.match(text, match.end())
                if page is not None:
                    end, pins = page.end(), ["at " + page.group(1)]
            if pins and free(match.start(), end):
                add(RecordCite("record_cite", match.start(), end, (), tuple(pins)))

    # Court-record cites without Bates numbers, anywhere: "Dkt. 12 at 3", "Compl. ¶ 4", "ECF
    # No. 9-4, PageID.512", "Trial Tr. vol. II, 145:1-3".
    for match in _DOC_ENTRY.finditer(text):
        end, pins = _pins_after(text, match.end() + text.startswith(",", match.end()))
        if pins and free(match.start(), end):
            add(RecordCite("record_cite", match.start(), end, (), tuple(pins)))
    by_pages(_HEARING_TRANSCRIPT)
    for match in _FILE_TAB.finditer(text):
        end, pins = _pins_after(text, match.end())
        if free(match.start(), end):
            tabs = " ".join(match.group(g) for g in ("tab", "sub") if match.group(g))
            add(
                RecordCite(
                    "record_cite",
                    match.start(),
                    end,
                    (),
                    tuple(pins),
                    title=re.sub(r"\s+", " ", tabs),
                )
            )
    by_pages(_TTABVUE)
    by_pages(_VOLUME_PAGE_TRANSCRIPT)
    by_pages(LETTER_VOLUME_TRANSCRIPT)
    for match in _DATED_TRANSCRIPT.finditer(text):
        if free(match.start(), match.end()):
            add(RecordCite("record_cite", match.start(), match.end(), (), (_page_pin(match),)))
    by_pins_or_page(_DATED_REPORT)
    designations = {m.group("n"): m.group("what") for m in _DESIGNATION.finditer(text)}
    for match in _DESIGNATED_TRANSCRIPT.finditer(text):
        if free(match.start(), match.end()):
            # (what the list says it is, for a transcript whose file names its day, not "1T")
            what = designations.get(match.group("n"))
            designation = f"{match.group('n')}T" + (f" ({what})" if what else "")
            pin = _page_pin(match)
            add(
                RecordCite(
                    "record_cite", match.start(), match.end(), (), (pin,), cited_as=designation
                )
            )
    by_pins_or_page(_NOTES_OF_TESTIMONY)
    for match in _VOLUME_TRANSCRIPT.finditer(text):
        end, pins = _pins_after(text, match.end())
        if pins and free(match.start(), end):
            add(RecordCite("record_cite", match.start(), end, (), tuple(pins)))
    for pattern in (_DOCKET, _PLEADING):
        for match in pattern.finditer(text):
            page_id = _PAGE_ID.match(text, match.end()) if pattern is _DOCKET else None
            if page_id is not None:
                pin = "PageID." + re.sub(r"\s+", "", page_id.group("ids"))
                if free(match.start(), page_id.end()):
                    add(RecordCite("record_cite", match.start(), page_id.end(), (), (pin,)))
                continue
            end, pins = _pins_after(text, match.end())
            if pattern is _PLEADING and not pins:
                continue
            own_brief = (
                own_brief_start(text, match.start(), own_party)
                if pattern is _PLEADING and _BRIEF_WORD.match(text, match.start())
                else None
            )
            if own_brief is not None:
                # "Appellant's Br. at 9" in the appellant's own brief: its own argument.
                if free(own_brief, end):
                    add(RecordCite("not_a_record_cite", own_brief, end))
                continue
            if pattern is _PLEADING and (
                _OWN_DRAFT.search(text, match.start(), end)
                or _DRAFT_BEFORE.search(text, max(0, match.start() - 12), match.start())
            ):
                # "Prior Draft Decl. ¶ 12": the pleading's own name says it is the team's own
                # draft (PINNED_OWN_WORK reads it); "the draft lease (Smith Decl. ¶ 4)" is a cite.
                continue
            if free(match.start(), end):
                add(RecordCite("record_cite", match.start(), end, (), tuple(pins)))

    for match in _APPENDIX_ANYWHERE.finditer(text):
        end, pins = _pins_after(text, match.end())
        if free(match.start(), end):
            add(RecordCite("record_cite", match.start(), end, (), tuple(pins)))

    # An exhibit by number with a pin, anywhere ("Ex. 3 at 2", "Exhibit B, p. 4"): a cite of
    # that exhibit's pages, also in a citation sentence.
    for match in _EXHIBIT_NUMBER.finditer(text):
        end, pins = _exhibit_pins_after(text, match.end())
        if pins and free(match.start(), end) and not _in_heading(text, match.start()):
            add(
                RecordCite(
                    "record_cite", match.start(), end, (), tuple(pins), _exhibit_label(match)
                )
            )

    # A patent by column and line, anywhere ("'482 patent at 5:19-22", "'482 patent, col. 5,
    # ll. 19-22"): the patent's columns are found on its pages (apps.verification.patents).
    for match in _PATENT_COLUMNS.finditer(text):
        if free(match.start(), match.end()):
            first = match.group("c1") or match.group("col")
            last = match.group("c2") or first
            pin = f"col. {first}" if first == last else f"cols. {first}-{last}"
            name = re.sub(r"\s+", " ", match.group("name"))
            add(RecordCite("record_cite", match.start(), match.end(), (), (pin,), title=name))

    # Inside cite positions: "1 App. 24", "Ex. 3 at 5", and what is used as a cite but is none.
    for p_start, p_end in positions:
        content = text[p_start:p_end]
        offset = p_start
        for part in re.finditer(r"[^;]+", content):
            a, b = trim(text, offset + part.start(), offset + part.end())
            if b <= a or not free(a, b):
                continue
            if b == p_end and text[b - 1] == "." and b - a > 1:
                b -= 1  # a citation sentence's own stop, "(TKT-88.)": no part of the cite
            piece = text[a:b]
            # (after a signal too: "(See Tab 12.)", "(see Ex. 4)")
            lead = SIGNAL.match(piece)
            cited = piece[lead.end() :] if lead else piece
            record = _APPENDIX.match(cited) or _EXHIBIT.match(cited)
            if record is not None and _COURT_YEAR.fullmatch(cited):
                continue  # "(App. 2020)": Arizona's Court of Appeals and a case's year
            if record is not None:
                at = a + (lead.end() if lead else 0)
                end, pins = _exhibit_pins_after(text, at + record.end())
                number = _EXHIBIT_NUMBER.match(cited)
                exhibit = (
                    _exhibit_label(number) if number and number.end() == record.end() else None
                )
                party = _PARTY_EXHIBIT.match(cited)
                if party is not None and party.end() == record.end():
                    exhibit = f"{party.group('party')}{int(party.group('n'))}"
                tab = _TAB.match(cited)
                title = f"Tab {tab.group('n')}" if tab and tab.end() == record.end() else None
                add(RecordCite("record_cite", at, end, (), tuple(pins), exhibit, title))
                # What follows the exhibit's label where its Bates number or page belongs
                # ("Ex. A, HM-GL-22-0418863", "Ex. D-1, CAM14_20220211.mp4"): one token of a
                # thing's shape is no page of the record.
                rest = re.match(r"[ \t]*,[ \t]*(?P<token>\S+)$", text[end:b])
                if rest is not None:
                    token = rest.group("token")
                    r_start = end + rest.start("token")
                    if free(r_start, b) and (
                        JUNK.fullmatch(token) or NOT_A_CITE_SHAPE.fullmatch(token)
                    ):
                        add(RecordCite("not_a_record_cite", r_start, b))
                continue
            if FISCAL_YEAR.fullmatch(piece) or before_a_cite(p_end):
                continue  # a fiscal year; what the record cite after it shows
            if YEAR_END.search(piece) and not is_generated(piece):
                continue  # "(D. Colo. 2021)", "(2019)": a case citation's parenthetical
            if _REPORTER_PAGE.search(piece) and not is_case_number(piece):
                # "(Pelican Wharf, 68 Cal.App.5th at 415.)": a case's, read as one ("21 WC
                # 014587 at 4" is a proceeding's number: no reporter pads its pages)
                continue
            if _AFTER_EXHIBIT.search(text, max(0, p_start - 24), p_start) and not is_generated(
                piece, words=False
            ):
                # "Ex. 7 (Liang sales plan and execution summary)": what the exhibit is; but
                # "Exhibit A (case chronology v2, row 14)" is the team's own work.
                continue
            if is_generated(piece):
                add(RecordCite("not_a_record_cite", a, b))
                continue
            signal = SIGNAL.match(piece)
            if names_a_brief_part(piece[signal.end() :] if signal else piece, own_parts):
                # "(Table 1)" under the draft's own "Table 1.", "(Point I, supra)", "Pl.'s
                # Mot., Table 1": the drafter's argument, not evidence.
                add(RecordCite("not_a_record_cite", a + (signal.end() if signal else 0), b))
                continue
            if not _closes_clause(text, p_end, p_start):
                continue
            if JUNK.fullmatch(piece):
                add(RecordCite("not_a_record_cite", a, b))
                continue
            # A name of a thing (a file, a setting, a ticket, a model or docket number) where a
            # cite closes a clause: the words before it are attributed to it.
            signal = SIGNAL.match(piece)
            bare = PIN_TAIL.sub("", piece[signal.end() :] if signal else piece)
            if (
                not signal
                and NUMBERED.fullmatch(bare.rstrip(",."))
                and (
                    _NAME_BEFORE.search(text, max(0, p_start - 40), p_start)
                    or _LIST_ITEM_AFTER.match(text, p_end)
                )
            ):
                # "Hadley (U.S. Patent No. 9,871,204)": what the name is; "a sealing plug
                # assembly (P/N 40-1120-04), a tether ...": which thing an item of a list is
                continue
            if (
                JUNK.fullmatch(bare)
                or names_a_thing(bare)
                or (lettered and _a_numbers_id(bare))
                or (
                    _SIGNAL_BEFORE.search(text, max(0, p_start - 16), p_start)
                    and _SHORT_CODE.fullmatch(bare)
                )
            ):
                add(RecordCite("not_a_record_cite", a + (signal.end() if signal else 0), b))
                continue
            # A document named by its name or title with a page ("Subcontract at 3").
            head = a + (signal.end() if signal else 0)
            named_match = _PLAIN_NAME.fullmatch(text, head, b)
            if named_match is not None and (
                _names_a_document(named_match.group("name"))
                or named_match.group("name").strip() in defined
            ):
                pin = _name_pin(named_match)
                title = named_match.group("name").strip()
                add(RecordCite("record_cite", head, b, (), (pin,), title=title))

    # A citation sentence of its own, with no signal or parenthesis ("Subcontract at 3."): a
    # document named with a page, vouching for the sentence before. Which document, if any,
    # the packet says (an unresolved one is left for review, `checks`).
    for match in _BARE_NAME_SENTENCE.finditer(text):
        a, b = match.span("cite")
        named_match = _PLAIN_NAME.fullmatch(text, a, b)
        if (
            named_match is not None
            and free(a, b)
            and not _in_heading(text, a)
            and SIGNAL.match(text[a:b]) is None  # "See Rule 56 at 3.": a cite position's
            and (
                _names_a_document(named_match.group("name"))
                or named_match.group("name").strip() in defined
            )
        ):
            pin = _name_pin(named_match)
            add(
                RecordCite("record_cite", a, b, (), (pin,), title=named_match.group("name").strip())
            )

    # After "at" or "Ex." in running prose, where a pin or an exhibit belongs ("the logs are
    # at gpu_node_7.log."): a name of a thing closing its clause is used as a cite.
    for match in _AT_POSITION.finditer(text):
        a, b = match.span("token")
        token = text[a:b].rstrip(".,;:")
        b = a + len(token)
        if (
            token
            and free(a, b)
            and _closes_clause(text, b)
            and (JUNK.fullmatch(token) or NOT_A_CITE_SHAPE.fullmatch(token))
        ):
            add(RecordCite("not_a_record_cite", a, b))

    for match in _PART_SENTENCE.finditer(text):
        if free(*match.span("part")) and names_a_brief_part(match.group("part"), own_parts):
            add(RecordCite("not_a_record_cite", *match.span("part")))

    # In running prose: a reference to the system's own work ("according to the lexweb
    # timeline summary v1") is used as a source, as a cite would be, and is none.
    for match in PROSE_REFERENCE.finditer(text):
        if free(match.start(), match.end()):
            add(RecordCite("not_a_record_cite", match.start(), match.end()))
    for match in PINNED_OWN_WORK.finditer(text):
        start = own_work_start(text, match.start())
        if free(start, match.end()):
            add(RecordCite("not_a_record_cite", start, match.end()))
    cites.sort(key=lambda c: c.start)
    return cites, quotes
