"""What sits where a record cite belongs and is none: labels of no Bates prefix of the case
("RTX3060", "GPU 0001") and references to the system's own work ("Draft v2", "the earlier
summary")."""

from __future__ import annotations

import re

from apps.verification.normalise import STOPWORDS

# A label-like token used as a cite: "RTX 3060", "GPU-0001", "A100", "RTX3060Ti"; with fewer
# digits, a code of three capitals or more joined to them ("GPU-7", "TPU3"), never the names
# of public standards or time offsets written so ("COVID-19", "DSM-5", "ICD-10", "UTC-7",
# "SOC-2"); and after such a token, the words of a model name ("A100 80GB", "RTX 4090 Ti").
# Words ("Section 12", "Rule 56", "Form 10-K", "Exhibit 3"), years and short codes ("Q3",
# "W-2") are none.
_CODE = r"[A-Z]{1,10}[\s_-]?\d{3,12}[A-Za-z]{0,3}"
_PUBLIC_NAMES = "COVID DSM ICD CPT SARS MERS HCPCS UTC GMT SOC PCI TLS SSL ISO NIST FIPS HTTP"
_SHORT_CODE = (
    rf"(?!(?:{'|'.join(_PUBLIC_NAMES.split())})[_-]?\d)[A-Z]{{3,10}}[_-]?\d{{1,2}}[A-Za-z]{{0,3}}"
)
_SPEC = r"\d{1,5}[A-Z]{2,4}|Ti|SUPER|XT|PCIe|SXM\d?"
# A designation whose digits stand between capitals ("L40S", "X86K", "RTX4090TI"): a model's
# or a part's name, never a Bates number (whose digits end it) or a word.
_ENCLOSED = r"(?=[A-Z0-9]{4,16}(?![\w-]))[A-Z]{1,6}\d{2,8}[A-Z]{1,6}[A-Z0-9]*"
JUNK = re.compile(
    rf"(?:{_CODE}|{_SHORT_CODE}|{_ENCLOSED})"
    rf"(?:[\s_-]+(?:{_CODE}|{_SHORT_CODE}|{_ENCLOSED}|{_SPEC})){{0,2}}(?![\w-])"
)
# A numbered thing named by its number ("Acct. No. 2297-5352", "Invoice Number 88-1", "Policy
# #4471", "Vch# 01477", a court filing's "PageID #: 1173"): an identifier of an account, a
# report, an invoice, not a page of the record. This
# case's own numbered cites (a docket entry, an exhibit) are read as record cites before.
_RECORD_NUMBERED = r"(?:Ex|Exh|Exhibit|Exs|Dkt|Docket|ECF|Doc|D\.E|Tab|App|Tr|Trial)\b"
_NAME_WORDS = r"(?:[A-Za-z][\w.'\u2019&-]*\s+){1,3}"
# (digits grouped by commas in thousands are one number: "Serial No. 97/654,321", "Reg. No.
# 5,432,198")
_IDENTIFIER = (
    r"(?:\d{4}(?:[ ]\d{4}){2,5}(?![\w])"  # (a tracking number's groups: "7019 2280 0001 4471")
    r"|(?=[\w./:,-]*\d)[A-Za-z0-9](?:[\w./:-]|,(?=\d{3}(?!\d)))*)"
)
NUMBERED = re.compile(
    # (a serial's or a part's number by its label alone: "S/N 22-0418-77", "P/N 4471-B")
    rf"(?!{_RECORD_NUMBERED})(?:(?:{_NAME_WORDS})?(?:S|P)/N:?\s*#?(?=\s?\d)"
    rf"|{_NAME_WORDS}(?:No|Nos|Number|Num)\.?\s*#?"
    rf"|{_NAME_WORDS}#:?|(?:[A-Za-z][\w.'\u2019&-]*\s+){{0,2}}[A-Za-z][\w.'\u2019&-]*#:?)"
    rf"\s?{_IDENTIFIER}",
    re.IGNORECASE,
)
# A thing named by a long number without "No." ("Invoice 88213", "Acct. 5521-0091", "File
# 23-118204"): a capitalised name and an identifier of four digits or more, or of groups joined
# by a hyphen or a slash. The law's and the record's own numbered units ("Rule 56", "Section
# 1031", "Form 1099", "Exhibit 12") are cites or citations, not things.
_LEGAL_UNITS = (
    r"(?:Rules?|Sections?|Sec|Secs|Forms?|Articles?|Art|Titles?|Chapters?|Ch|Parts?|Regs?"
    r"|Regulations?|Schedules?|Sched|Items?|Counts?|Paragraphs?|Paras?|Pages?|Pp?|Vol"
    r"|Volumes?|Claims?(?=\s+\d{1,3}\b)|U\.S\.C|C\.F\.R|Pub|Stat|Code)\b"
)
_LEGAL_UNIT_FIRST = re.compile(rf"{_LEGAL_UNITS}\.?\s+\d")
LEGAL_UNIT_FIRST = _LEGAL_UNIT_FIRST  # "Rule 56", "Section 12": the law's numbered units
# (an account's last digits behind its mask, "x4417", "XXXX-4417", "****4417", are its number)
_LONG_IDENTIFIER = (
    r"(?:\d{4,}|\d+(?:[-/]\d+)+)(?:-?[A-Za-z]{1,3})?|(?:[xX]{1,12}|\*{1,12})-?\d{3,6}"
)
NAMED_BY_NUMBER = re.compile(
    # (a unit's letter that opens an initialism is none: "P.O. 24-3318" is a purchase order's)
    rf"(?!(?:{_RECORD_NUMBERED}|{_LEGAL_UNITS})(?!\.[A-Za-z]))[A-Z][\w.'\u2019&-]*(?:\s+[A-Za-z][\w.'\u2019&-]*){{0,2}}"
    rf"\s+(?:{_LONG_IDENTIFIER})"
)

# What stands where a record cite belongs and names a thing rather than a page of the record,
# by its shape (not by its words): a file name (a name with a file type's extension), an
# identifier joined by underscores (an environment variable, a setting, a file's stem), a
# variable as a shell or Windows expands it ("$EXPORT_DIR", "${HOME}", "%APPDATA%"), a serial
# or a hash (letters between digits), a
# number sign with digits (a ticket), or a code mixing letters and digits joined by hyphens,
# dots, colons or slashes (a model, a machine, a docket, account or report number). Public
# standards and time offsets written so ("COVID-19", "UTC-7") and codes of four characters
# or fewer ("10-K", "W-2") are none of these.
_FILE_TYPES = (
    "pdf|docx?|xlsx?|xlsm|csv|tsv|txt|json|jsonl|ya?ml|md|log|pptx?|msg|eml|zip|png|jpe?g|gif"
    "|tiff?|html?|xml|py|ipynb|rtf|odt|ods|sql|db|parquet|bak|tmp|cfg|ini|toml|env"
    "|mp4|m4v|mov|avi|wmv|mkv|webm|mp3|m4a|wav|dcm|heic"  # recordings and images kept natively
    "|do|ado|dta|sas|sas7bdat|sav|rds|rdata|smcl"  # statistical programs, their data and logs
)
_SHAPES = (
    rf"[\w][\w.\-]*\.(?:{_FILE_TYPES})"
    r"|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?:=\S+)?"
    r"|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%"
    r"|#\s?\d{2,}"
    # (a chat channel, "#cbef-claims-qa", and an address or a message's id, "...@mail.x.com")
    r"|#[a-z][a-z0-9_-]{2,}|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    # (a web address: "www.example.com/shop", "https://example.com/a?b=1")
    r"|(?:https?://|www\.)[\w-]+(?:\.[\w-]+)+(?:/[\w.~%/?#=&+:@-]*)?"
    # (a serial, a security's CUSIP or a hash of nine characters or more whose letters stand
    # between digits, "21987R107", "4C530001220618117083": a Bates number's letters only lead
    # or end it)
    r"|(?=[A-Za-z0-9]{9,}(?![\w-]))[A-Za-z0-9]*\d[A-Za-z]+\d[A-Za-z0-9]*"
    # (a short code that opens with digits and has letters between digits, "3RMV9", "7KX42":
    # a registrant's code, a part's; a Bates number's digits end it, a reporter's series
    # "3d" has no digit after its letters)
    r"|(?=[A-Za-z0-9]{4,8}(?![\w-]))\d+[A-Za-z]+\d[A-Za-z0-9]*"
    # (an ISO 8601 date and time, "2024-02-11T23:47:05Z", is a date, not a code)
    rf"|(?!(?:{'|'.join(_PUBLIC_NAMES.split())})[_-]?\d|\d{{4}}-\d\d-\d\dT\d)"
    r"(?=[\w.:/-]*\d)(?=[\w.:/-]*[A-Za-z])"
    r"(?=[\w.:/-]{5})[A-Za-z0-9]+(?:[-.:/][A-Za-z0-9]+)+"
)
NOT_A_CITE_SHAPE = re.compile(rf"(?<![\w.-])(?:{_SHAPES})(?![\w-])", re.IGNORECASE)
# A signal before a cite, and a pin after one ("see X at 4", "X, p. 3").
SIGNAL = re.compile(
    r"^(?:see(?:,?\s+also)?|cf\.|e\.g\.,?|accord|compare|contra|but\s+see|citing|per|also)"
    r"[,:]?\s+",
    re.IGNORECASE,
)
PIN_TAIL = re.compile(r"(?:,?\s+at\s+\d+(?:[-:]\d+)*|,?\s+pp?\.\s*\d+(?:-\d+)?)$")
MAX_NAME_WORDS = 4  # a cite's words: "Ticket #8812", "Case No. 2:23-cv-04567"

_GENERATED = [
    re.compile(
        r"\b(?:lexweb|ChatGPT|GPT-?\d\w*|LLMs?|chatbot|assistant|(?:auto|machine|system|AI"
        r"|computer|model|bot)[- ](?:generated|drafted|written|produced|made)|auto-?summary)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\bAI\b"),
    # What a reference says of its own making: "generated ..." or "drafted ..." naming a work
    # ("generated fact sheet"), not a remark on a document's history ("as drafted", "drafted
    # by counsel" names who, and is read by the words around it).
    re.compile(r"\b(?:generated|drafted)\s+(?!by\b)[A-Za-z]", re.IGNORECASE),
    # A version or revision of a work ("v2", "version 3", "rev. 2"): the team's own drafts
    # carry these; a produced document is cited by its Bates numbers.
    re.compile(
        r"\bv\.?\s?\d+(?:\.\d+)*\b|\bversion\s+\d+|\brev(?:\.|ision)?\s?\d+\b", re.IGNORECASE
    ),
    re.compile(
        r"\b(?:earlier|prior|previous|preceding|last|initial|first|our|generated|model|model['\u2019]s"
        r"|system|system['\u2019]s|internal)\s+"
        r"(?:[\w.]+\s+){0,2}(?:draft|summary|brief|declaration|decl\.|memo(?:randum)?|version"
        r"|analysis|outline|chronology|timeline|output|report)s?\b",
        re.IGNORECASE,
    ),
]
# Words a reference to the team's own work uses, which a produced document's title may use too
# ("execution summary"): signs only where nothing else says what the reference is.
_GENERATED_WORDS = [
    re.compile(r"\bdrafts?\b", re.IGNORECASE),
    re.compile(r"\bsummar(?:y|ies)\b(?!\s+judgment)", re.IGNORECASE),
]
# A reference to the system's own work in running prose, outside any parenthetical: a document
# of lexweb's or a named chat model's ("according to the lexweb timeline summary v1"), or one
# "generated by lexweb" ("as the earlier memo generated by lexweb says"). Only such names: in
# prose, "the system-generated report" or "the model's output" may be a document of the case.
_DOCUMENT = (
    r"(?:drafts?|summar(?:y|ies)(?!\s+judgment)|memo(?:randum|s)?|timelines?|chronolog(?:y|ies)"
    r"|analys[ie]s|outlines?|reports?|briefs?|notes|outputs?|digests?|declarations?)"
)
_NAMED = r"(?:lexweb|ChatGPT|GPT-?\d[\w.]*)"
_VERSION = r"(?:\s+(?:v\.?\s?\d+(?:\.\d+)*|version\s+\d+))?(?:,?\s+(?:pp?\.\s*|at\s+)\d+)?"
_DOCUMENTS = rf"{_DOCUMENT}(?:\s+{_DOCUMENT}){{0,3}}\b{_VERSION}"  # bounded: linear time
PROSE_REFERENCE = re.compile(
    # "the system's prior memo summarizing the file, at 3": the drafting system's own
    # earlier work cited with a pin (a produced "system's report" names no earlier work of its
    # own; without a pin the mention is read by the cite after it).
    r"(?<![\w-])(?:the|our)\s+(?:system|model)['\u2019]s\s+(?:prior|earlier|previous|first|initial)"
    r"\s+(?:drafts?|memo(?:randum)?|summary|chronology|outline|analysis)\b"
    r"(?:[ \t]+[\w'\u2019-]+){0,6}?,?[ \t]+(?:at|pp?\.|\u00b6)[ \t]*\d+"
    rf"|(?<![\w-]){_NAMED}(?:['\u2019]s)?\s+(?:[\w-]+\s+){{0,3}}?{_DOCUMENTS}"
    rf"|(?<![\w-])(?:(?:earlier|prior|previous|first|initial|last)\s+)?(?:[\w-]+\s+){{0,2}}?"
    rf"{_DOCUMENTS}\s+(?:(?:generated|written|produced|prepared|drafted|created)\s+by|from)"
    rf"\s+{_NAMED}(?![\w-])",
    re.IGNORECASE,
)
# ... and a work that marks itself as the team's own draft, by a version ("Draft v3", "worksheet
# v2", "rev. 4") or as an earlier draft ("the prior draft of this brief"), cited with a pin
# ("¶ 14", "§ II.B", "tab 2", "p. 3"): a pin makes it a source the sentence leans on, wherever
# it stands. (A produced document is cited by its Bates numbers; a bare "draft" is often one
# of the case's documents, "the draft agreement", and is left alone.)
_OWN_MARK = (
    # (a whole version: "firmware v2.1" is a product's)
    r"(?:(?:prior|earlier|previous|preceding)[ \t]+draft|v\.?\d+|version[ \t]+\d+"
    r"|rev\.?[ \t]?\d+)\b(?!\.\d)"
)
PINNED_OWN_WORK = re.compile(
    rf"(?<![\w-]){_OWN_MARK}"
    # (the work's own word after the mark: "our earlier draft disclosure, ¶ 3(b)")
    r"(?:[ \t]+(?:of|to|for)[ \t]+(?:this|the|our|that)[ \t]+[A-Za-z]+|[ \t]+[A-Za-z]{4,}"
    r"|[ \t]+[A-Z][a-z]{2,5}\.)?"  # ("Prior Draft Decl. ¶ 12")
    r",?[ \t]+(?:¶¶?|§§?|[Tt]ab|[Pp]p?\.|[Pp]aras?\.|[Pp]aragraphs?|[Rr]ows?|[Ss]heet|[Ee]ntry"
    r"|[Tt]bl\.|[Tt]ables?|[Ff]ig\.|[Ff]igures?"
    r"|at(?=[ \t]+\d))[ \t]*"
    r"[A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*(?:[-\u2013][A-Za-z0-9.]+)?(?:\([a-z0-9]{1,3}\))?",
    re.IGNORECASE,
)
_TITLE_WORD = re.compile(r"(?:^|(?<=[ \t]))([A-Za-z][\w.'\u2019-]*)[ \t]+$")
TITLE_WORDS_BEFORE = 3


def own_work_start(text: str, start: int) -> int:
    """Where a `PINNED_OWN_WORK` reference's title begins: the words just before its mark
    ("Delacroix Decl." of "Delacroix Decl. draft v1, ¶ 18"), at most TITLE_WORDS_BEFORE of
    them, up to a function word ("in the ...") or a word ending a sentence."""
    for _ in range(TITLE_WORDS_BEFORE):
        word = _TITLE_WORD.search(text, max(0, start - 40), start)
        if word is None:
            break
        token = word.group(1)
        if token.lower() in STOPWORDS or (token.endswith(".") and token[:-1].islower()):
            break  # ("... of the manual. Compare rev. 4": a sentence's end)
        start = word.start(1)
    return start


FISCAL_YEAR = re.compile(r"(?:FY|CY)[-_. ]?(?:19|20)\d\d")
# A year closing a case citation's parenthetical ("(D. Colo. 2021)", "(2019)"); the last group
# of a hyphenated or slashed number ("Acct. No. 7126-2086") is no year.
YEAR_END = re.compile(r"(?<![-/])\b(?:1[6-9]|20)\d\d\s*$")


def is_generated(part: str, *, words: bool = True) -> bool:
    """Whether `part` names the system's own work; with `words` False, by the marks of its
    making alone (a version, "generated", a model's name), not by a word such as "summary"."""
    # A file name's words are read apart ("timeline_v3_final.docx": "timeline v3 final").
    spaced = re.sub(r"[_]+", " ", part)
    patterns = [*_GENERATED, *_GENERATED_WORDS] if words else _GENERATED
    return any(p.search(part) or p.search(spaced) for p in patterns)


# A form's or a part's number printed in groups of digits after its letters ("HO 00 03 05
# 11", "CG 20 10 04 13", a specification's section "Spec. 08 44 13"): three groups or more,
# which no Bates number (one run of digits, with at most a page suffix) is written in.
_DIGIT_GROUPS = re.compile(r"(?:[A-Z]{1,6}|[A-Z][a-z]{1,6}\.)(?:[ \t-]+\d{2,4}){3,}")
# A product named with a capital inside its word after two lowercase letters or more, and its
# version ("ClaimCenter 10", "FileNet 5.5"): software, not a document of the record.
_VERSIONED = re.compile(r"[A-Z][a-z]{2,}[A-Z][A-Za-z]*[ \t]+v?\d{1,2}(?:\.\d{1,2}){0,2}")


# A place a file is kept, whatever its words: a web address ("https://firm.sharepoint.com/sites/
# Shared Documents/LOI.pdf"), a network share (two backslashes and a server's name) or a
# drive's path ("C:" and a backslash).
_LOCATION = re.compile(r"(?:https?|ftp|file|smb)://\S|\\\\[\w.-]+\\|[A-Za-z]:\\\w")


# A court's or an agency's case number by its year, its type's letters and its serial, apart
# ("21 WC 014587" of the Illinois Workers' Compensation Commission, Cook County's "2022 L
# 004471", "2021 CH 01234"): a proceeding, not a page of the record; no Bates number puts
# digits before its letters.
_CASE_NUMBER = re.compile(r"(?:No\.[ \t]*)?(?:19|20)?\d\d[ \t]+[A-Z]{1,3}[ \t]+\d{4,7}")
# A work named with a row or an item of its list as the pin ("Timeline, row 9", "Exhibit List,
# item F", "Damages Summary, rows 3-5"): a spreadsheet, a table or a list, not pages; a packet
# document of that name is found by the check (and read as a cite of it), anything else is
# none of the record's.
_ROW_PINNED = re.compile(
    r"(?:[A-Z][\w.'\u2019&-]*[ \t]+){0,3}[A-Z][\w.'\u2019&-]*,?[ \t]+(?:[Rr]ows?|[Ii]tems?)"
    r"[ \t]+(?:\d{1,5}|[A-Z])(?:[-\u2013](?:\d{1,5}|[A-Z]))?"
)


def is_case_number(piece: str) -> bool:
    """Whether `piece` (its pin taken off) is a proceeding's case number ("21 WC 014587")."""
    return _CASE_NUMBER.fullmatch(PIN_TAIL.sub("", piece.strip().rstrip(",."))) is not None


def names_a_thing(piece: str) -> bool:
    """Whether a cite position's piece (its signal and pin taken off) is a name of a thing of
    one of the shapes above, in a few words ("Ticket #8812", "see H100-NODE-3")."""
    whole = piece.strip().rstrip(",.")
    if (
        _DIGIT_GROUPS.fullmatch(whole)
        or _VERSIONED.fullmatch(whole)
        or _LOCATION.match(whole)
        or _CASE_NUMBER.fullmatch(whole)
        or _ROW_PINNED.fullmatch(whole)
    ):
        return True
    words = piece.split()
    if not words:
        return False
    if _LEGAL_UNIT_FIRST.match(whole):
        return False  # "Rule 10b-5", "Section 2-207": the law's units, cited by their numbers
    # (NUMBERED bounds its own name's words: "Lakeview Mercy Acct. No. 4471902236".)
    if NUMBERED.fullmatch(whole) or (
        len(words) <= MAX_NAME_WORDS and NAMED_BY_NUMBER.fullmatch(whole)
    ):
        return True
    if len(words) > MAX_NAME_WORDS:
        return False
    return any(
        NOT_A_CITE_SHAPE.fullmatch(w.rstrip(",."))
        # A model's or a part's name among other words ("DGX A100"), never a fiscal year.
        or (JUNK.fullmatch(w.rstrip(",.")) and not FISCAL_YEAR.fullmatch(w.rstrip(",.")))
        for w in words
    )


def is_generated_reference(text: str) -> bool:
    """Whether a not-a-record-cite names the system's own work ("Draft v2", "the earlier
    summary", "lexweb case summary v4") rather than a token that is no Bates number."""
    return is_generated(text)


# A part of a brief where a record cite belongs: the drafter's argument, never evidence. This
# draft's own heading or caption ("(Table 1)" under its "**Table 1. Final Consensus Ratings**",
# "(Point I)" under its "### POINT I"), a cross-reference to a division of a brief ("Point I,
# supra", "Part II.B, infra"), or a division of a party's brief ("Objectant's Mem. of Law,
# Point II", "Pl.'s Mot., Table 1"). A page of a party's brief ("Def.'s Mot. at 12") says what
# that party argues and is left alone.
_PART_WORD = r"(?:Point|Part|Section|Table|Fig(?:ure)?\.?|Chart|Schedule|Appendix)"
_ROMAN = r"[IVXLC]{1,6}"
_PART_LABEL = rf"{_PART_WORD}[ \t]+(?:{_ROMAN}|\d{{1,3}}|[A-Z])(?:\.[A-Z0-9]{{1,3}})*"
# (only divisions that no statute or record names so: a Point, a Part or a Section by its
# Roman numeral, a petition's Ground or Claim by its numeral or its word, "Ground Two";
# "Section 5, supra" may be a statute's section cited before)
_NUMBER_WORD = r"(?:One|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Eleven|Twelve)"
_DIVISION = (
    rf"(?:(?:Point|Part|Section)[ \t]+{_ROMAN}(?:\.[A-Z0-9]{{1,3}})*"
    rf"|(?:Ground|Claim)[ \t]+(?:{_ROMAN}|{_NUMBER_WORD}))"
)
_CROSS_REFERENCE = re.compile(rf"{_DIVISION},?[ \t]+(?:supra|infra)")
_PARTY = (
    r"(?:Pl|Pls|Plf|Plfs|Def|Defs|Dft|Dfts|Plaintiffs?|Defendants?|Objectants?|Petitioners?"
    r"|Respondents?|Appellants?|Appellees?|Proponents?|Movants?|Gov['\u2019]t|Government"
    r"|Debtors?|Trustee|Claimants?|Intervenors?)\.?(?:['\u2019]s?)?"
)
_BRIEF = (
    r"(?:Mem(?:orandum)?|Br(?:ief)?|Mot(?:ion)?|Opp(?:['\u2019]n|osition)?|Reply|Resp(?:onse)?)"
    # (what it answers or supports: "of Law", "in Supp.", "to Mot. for Summ. J.")
    r"\.?(?:[ \t]+(?:of|in|to|for|re)[ \t]+[^,;()\n]{1,40}?)?"
)
# (a brief named by its place in the briefing needs no party: "Reply Br., Ground Two")
# (a brief's section named before its part: "Appellant's Br., Statement of the Case, Part B.3")
_SECTION_NAME = r"(?:[A-Z][a-z]+(?:[ \t]+(?:of|the|and|for|[A-Z][a-z]+)){0,5},?[ \t]+)?"
_BRIEF_PART = re.compile(
    rf"(?:{_PARTY}[ \t]+{_BRIEF}|(?:Reply|Opening|Answering)[ \t]+Br(?:ief)?\.?),?[ \t]+"
    rf"{_SECTION_NAME}(?:{_PART_LABEL}|{_DIVISION})"
)
# A section every appellate brief has by the rules of procedure ("Statement of the Questions
# Involved", "Argument II.B", "Summary of Argument"), named alone or with its division where a
# record cite belongs: a part of the brief. (A record's document named so carries a pin, "Joint
# Statement of Undisputed Facts ¶ 4", and is no section alone.)
_BRIEF_SECTION = re.compile(
    r"(?:Statement[ \t]+of[ \t]+(?:the[ \t]+)?(?:Case|Facts|Jurisdiction|Issues(?:[ \t]+Presented)?"
    r"|Questions?[ \t]+(?:Involved|Presented)|Scope[ \t]+and[ \t]+Standard[ \t]+of[ \t]+Review)"
    r"|Summary[ \t]+of[ \t]+(?:the[ \t]+)?Argument|Argument|Questions?[ \t]+Presented)"
    rf"(?:,?[ \t]+(?:Part[ \t]+)?(?:{_ROMAN}|[A-Z]|\d{{1,2}})(?:\.[A-Z0-9]{{1,3}})*)?"
)
_OWN_HEADING = re.compile(
    rf"^[ \t]*(?:#{{1,6}}[ \t]+|\*\*|__)?(?P<label>{_PART_LABEL})(?![\w-])", re.IGNORECASE
)


# The party a draft is written for, as its title names it: "BRIEF FOR APPELLANT KEELSON
# LADDER COMPANY", "OPPOSER'S REPLY BRIEF", "PLAINTIFF'S MEMORANDUM OF LAW".
_PARTY_WORDS = frozenset(
    {"plaintiff", "defendant", "appellant", "appellee", "petitioner", "respondent", "opposer"}
    | {"applicant", "movant", "claimant", "debtor", "creditor", "objectant", "intervenor"}
    | {"relator", "registrant", "proponent"}
)
_ANSWERED_BEFORE = frozenset({"TO", "AGAINST", "V", "VS"})
_BRIEF_TITLE = re.compile(r"\b(?:BRIEF|MEMORANDUM|MOTION|REPLY|PETITION|RESPONSE)\b")
_TITLE_LINES = 40  # a title stands among a draft's first lines
OWN_BRIEF_CHARS = 40  # how far before a brief's cite its party's abbreviation is read


def drafters_party(text: str) -> str | None:
    """The party a draft's own title names ("appellant"), or None."""
    for line in text.splitlines()[:_TITLE_LINES]:
        words = re.sub(r"[#*_]", " ", line).strip()
        if not words or not words.isupper() or _BRIEF_TITLE.search(words) is None:
            continue
        previous = ""
        for word in re.findall(r"[A-Z]+", words):
            singular = word.lower().removesuffix("s")
            # ("OPPOSITION TO DEFENDANT'S MOTION": the party answered, not the drafter's)
            if singular in _PARTY_WORDS and previous not in _ANSWERED_BEFORE:
                return singular
            previous = word
    return None


_PARTY_BEFORE = re.compile(r"(?P<party>[A-Z][A-Za-z]+)\.?(?:['\u2019]s?)?[ \t]+$")


def own_brief_start(text: str, start: int, party: str | None) -> int | None:
    """Where a brief's cite starts when the party before it ("Appellant's Br. at 9", "Opp. Br.
    at 12", "Pl.'s Mem. at 4") is the draft's own (`drafters_party`): the drafting side's own
    argument, never evidence. None for another party's brief, or a brief of no party."""
    if party is None:
        return None
    before = _PARTY_BEFORE.search(text, max(0, start - OWN_BRIEF_CHARS), start)
    if before is None:
        return None
    letters = before.group("party").lower()
    letters = letters[:-1] if len(letters) > 3 and letters.endswith("s") else letters
    return before.start() if len(letters) >= 2 and party.startswith(letters) else None


def own_part_labels(text: str) -> frozenset[str]:
    """The labels of the parts a draft prints as its own headings or captions (a Markdown
    heading, a line in bold, a line in capitals), in lower case: "table 1", "point i"."""
    labels = set()
    for line in text.splitlines():
        stripped = line.strip()
        heading = stripped.startswith(("#", "**", "__")) or (
            stripped.isupper() and len(stripped) <= 80
        )
        found = _OWN_HEADING.match(line) if heading else None
        if found is not None:
            labels.add(_label_key(found.group("label")))
    return frozenset(labels)


def _label_key(label: str) -> str:
    return re.sub(r"\s+", " ", label.strip()).lower()


def is_brief_part(text: str) -> bool:
    """Whether a not-a-record-cite the extractor read as a part of a brief (`names_a_brief_part`)
    is one, by its shape alone: a part's label, a cross-reference or a party's brief's part."""
    whole = text.strip().rstrip(",.")
    return names_a_brief_part(whole) or re.fullmatch(_PART_LABEL, whole, re.IGNORECASE) is not None


def names_a_brief_part(piece: str, own: frozenset[str] = frozenset()) -> bool:
    """Whether a cite position's piece (its signal taken off) names a part of a brief: one of
    the draft's `own` parts, a cross-reference ("Point I, supra") or a part of a party's brief
    ("Pl.'s Mot., Table 1")."""
    whole = piece.strip().rstrip(",.")
    if (
        _CROSS_REFERENCE.fullmatch(whole)
        or _BRIEF_PART.fullmatch(whole)
        or _BRIEF_SECTION.fullmatch(whole)
    ):
        return True
    return (
        bool(own)
        and re.fullmatch(_PART_LABEL, whole, re.IGNORECASE) is not None
        and (_label_key(whole) in own)
    )
