"""The verifier's evaluation: a set folder in the format of ../shared/eval/verifier/ (its README
describes it), findings as JSON lines, and the README's scoring rules.

Pure Python (no Django, no database), so `bench/verifier_eval.py --fast` can use it without
either; `manage.py verify_eval` adds the real ingest, stamping and freezing around it. Both
live in the dev package (lexweb_dev/), beside the generator's benchmarks, not in the product:
a product install has no evaluation harness (issue 23).

1. `load_set(path)`: a set folder (every subfolder holding a case.json, in name order) or one
   case folder. Each case's case.json, drafts and labels are read and checked. With
   `failures=[]`, a case folder of a set that cannot be read is listed there (its name and
   why) and the others load: `manage.py verify_eval` runs every case it can.
   A case's productions: case.json's `productions` (several, each with its volume, prefix,
   start, digits, optional page suffix and legend, and documents), or one production of every
   document from `bates_prefix`, `bates_start` and `bates_digits` (the first format).
2. Pages: `fast_pages(case)` builds the verifier's PageRecords from page_text.jsonl and the
   case.json Bates map (no ingest; image-only pages are marked as OCR text). The command builds
   them from a frozen packet instead.
3. `verify_case(case, pages, extract, verify)`: every draft of the case through the claim
   extractor and the checks; one `FindingRow` per finding, its draft named as the scorer names
   it (prefixed with the case folder when a whole set is scored).
4. `score(labels, findings)`: the README's rules. A flag is an unsupported or contradicted
   finding; an unsupported label is caught when a flag in its draft overlaps its span; recall =
   caught / unsupported labels (overall and per error kind); precision = flags overlapping an
   unsupported label / flags; false-flag rate = supported labels overlapped by a flag /
   supported labels; needs_review is counted, never a flag. Each label's written form
   (`written_form`: an amount in words or with a currency code, a date with its year in words,
   a transcript's page and line, a footnote pin, a California-style cite, ...) is read from its
   text, and recall and false flags are reported per kind and form too (`by_form`), so that a
   form the checks read badly shows even when its kind's figure hides it.
"""

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from apps.verification import numwords

if TYPE_CHECKING:
    from apps.verification.claims import Claim
    from apps.verification.index import PageRecord

# The targets (requirement 9 and "Targets").
TARGET_RECALL = 0.98  # in every error kind
TARGET_PRECISION = 0.95
TARGET_FALSE_FLAG_RATE = 0.03

FLAG_STATUSES = frozenset({"unsupported", "contradicted"})
STATUSES = frozenset({"supported", "unsupported", "contradicted", "needs_review"})
# case.json's origins, as documents.Document.Origin values; anything else is refused.
ORIGINS = {
    "client": "client",
    "public": "public_record",
    "public_record": "public_record",
    "court": "court",
    "opposing": "opposing",
    "third_party": "third_party",
    "work_product": "work_product",
}
# Claim kinds (apps.verification.claims.Kind) as the README's label kinds.
README_KINDS = {
    "record_cite": "bates",
    "not_a_record_cite": "bates",
    "case_citation": "case_citation",
    "date": "date",
    "amount": "amount",
    "quote": "quote",
}
# The most a set may hold before loading refuses it (a typo'd path to a huge tree).
MAX_DRAFT_BYTES = 20_000_000
MAX_PRODUCTIONS = 50  # a case's productions in case.json


class EvalSetError(ValueError):
    """The folder is not in the eval set's format; the message names the file and the problem."""


@dataclass(frozen=True)
class BatesEntry:
    bates: str  # the number as stamped, never the legend beside it
    document: str
    page: int
    image_only: bool
    production: str = ""  # the volume of the production that stamped it ("" in the first format)
    legend: str = ""  # the confidentiality legend stamped beside the number, if any


@dataclass(frozen=True)
class ProductionSpec:
    """One production of a case: its documents in order, stamped from `start`. With
    `page_suffix_digits` N > 0 a document takes one number and its pages carry it with a
    suffix (ABC000101.0001, .0002, ...); with 0, every page takes the next number."""

    volume: str
    prefix: str
    start: int
    digits: int
    documents: tuple[str, ...]
    page_suffix_digits: int = 0
    legend: str = ""
    party: str = ""  # whose production: "ours", "opposing", "third_party" (descriptive)

    def label(self, number: int, page: int | None = None) -> str:
        text = f"{self.prefix}{number:0{self.digits}d}"
        if self.page_suffix_digits and page is not None:
            text += f".{page:0{self.page_suffix_digits}d}"
        return text


@dataclass(frozen=True)
class Label:
    draft: str  # as the scorer names it ("case-x/drafts/a.md" in a set, "drafts/a.md" alone)
    kind: str
    start: int
    end: int
    supported: bool
    error: str
    text: str


@dataclass(frozen=True)
class Case:
    """One case folder, read and checked."""

    name: str  # the folder's name
    path: Path
    prefixed: bool  # drafts are named "<name>/drafts/..." (a whole set is being scored)
    title: str
    case_number: str
    court: str
    bates_prefix: str
    bates_start: int
    bates_digits: int
    documents: tuple[str, ...]  # production order
    origins: Mapping[str, str]  # filename -> Document.Origin value
    image_only: frozenset[str]
    bates_map: tuple[BatesEntry, ...]
    drafts: tuple[str, ...]  # "drafts/a.md", relative to the case folder
    labels: tuple[Label, ...] = field(default=())
    # Every production of the case, in the order they are made; the first format's one
    # production (`bates_prefix`...) is `productions[0]`, as are the three fields above.
    productions: tuple[ProductionSpec, ...] = field(default=())

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The prefixes of the case's productions, each once, in production order."""
        return tuple(dict.fromkeys(p.prefix for p in self.productions)) or (self.bates_prefix,)

    def draft_key(self, draft: str) -> str:
        return f"{self.name}/{draft}" if self.prefixed else draft

    def draft_text(self, draft: str) -> str:
        return (self.path / draft).read_text(encoding="utf-8")


class FindingRow(TypedDict):
    """One line of findings.jsonl: the scorer's fields, then what helps to read a miss."""

    draft: str
    start: int
    end: int
    status: str
    kind: str
    check: str
    message: str
    text: str
    bates: list[str]


# --- 1. Loading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseFailure:
    """A case that could not run: its folder's name, the step that stopped it, and why."""

    case: str
    stage: str  # "load", or the step of the run ("ingest", "stamp", "freeze", "verify")
    reason: str
    labels: int = 0  # its labels (0 when they could not be read): not scored
    unsupported_labels: int = 0


def load_set(path: Path, *, failures: list[CaseFailure] | None = None) -> list[Case]:
    """The cases of a set folder (subfolders with a case.json, by name), or the one case of a
    case folder. EvalSetError, naming the file, when something is missing or malformed; with
    `failures` given, a set's case folder that cannot be read is added to it instead (stage
    "load"), and EvalSetError only when no case can be read."""
    path = Path(path)
    if not path.is_dir():
        raise EvalSetError(f"{path} is not a folder.")
    if (path / "case.json").is_file():
        return [load_case(path, prefixed=False)]
    folders = sorted(p for p in path.iterdir() if p.is_dir() and (p / "case.json").is_file())
    if not folders:
        raise EvalSetError(f"{path} holds no case folder (a subfolder with a case.json).")
    if failures is None:
        return [load_case(folder, prefixed=True) for folder in folders]
    cases = []
    for folder in folders:
        try:
            cases.append(load_case(folder, prefixed=True))
        except EvalSetError as exc:
            failures.append(CaseFailure(case=folder.name, stage="load", reason=str(exc)))
    if not cases:
        raise EvalSetError(f"no case of {path} can be read; the first: {failures[0].reason}")
    return cases


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise EvalSetError(f"{path}: {exc}") from None


def _need(
    data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: Path | str
) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise EvalSetError(f"{where}: {key!r} is missing or not {getattr(kind, '__name__', kind)}.")
    return value


def load_case(folder: Path, *, prefixed: bool) -> Case:
    meta_path = folder / "case.json"
    meta = _read_json(meta_path)
    if not isinstance(meta, dict):
        raise EvalSetError(f"{meta_path}: not a JSON object.")
    productions = _read_productions(meta, meta_path)
    if productions and "documents" not in meta:
        documents = tuple(dict.fromkeys(d for p in productions for d in p.documents))
    else:
        documents = tuple(_need(meta, "documents", list, meta_path))
    origins_raw = meta.get("origin") or {}
    origins: dict[str, str] = {}
    for name in documents:
        if not isinstance(name, str) or not (folder / "sources" / name).is_file():
            raise EvalSetError(f"{meta_path}: document {name!r} is not in sources/.")
        given = origins_raw.get(name, "client")
        if given not in ORIGINS:
            raise EvalSetError(f"{meta_path}: unknown origin {given!r} of {name}.")
        origins[name] = ORIGINS[given]
    if productions is None:
        productions = (
            ProductionSpec(
                volume="EVAL001",
                prefix=_need(meta, "bates_prefix", str, meta_path),
                start=_need(meta, "bates_start", int, meta_path),
                digits=_need(meta, "bates_digits", int, meta_path),
                documents=documents,
            ),
        )
    else:
        _check_productions(meta, productions, documents, meta_path)
    bates_map = _read_bates_map(meta, meta_path)
    if "productions" in meta:
        _check_labels(bates_map, productions, meta_path)
    first = productions[0]
    case = Case(
        name=folder.name,
        path=folder,
        prefixed=prefixed,
        title=str(meta.get("title") or folder.name),
        case_number=str(meta.get("case_number") or ""),
        court=str(meta.get("court") or ""),
        bates_prefix=first.prefix,
        bates_start=first.start,
        bates_digits=first.digits,
        documents=documents,
        origins=origins,
        image_only=frozenset(meta.get("image_only") or ()),
        bates_map=bates_map,
        drafts=tuple(
            f"drafts/{p.name}"
            for p in sorted((folder / "drafts").glob("*"))
            if p.is_file() and not p.name.startswith(".")
        ),
        productions=productions,
    )
    if not (folder / "labels.jsonl").is_file():
        return case
    named: set[str] = set()
    labels = tuple(_load_labels(case, named))
    # A draft the labels name outside drafts/ is verified too.
    drafts = case.drafts + tuple(sorted(named - set(case.drafts)))
    return Case(**{**case.__dict__, "labels": labels, "drafts": drafts})


def _read_bates_map(meta: Mapping[str, Any], meta_path: Path) -> tuple[BatesEntry, ...]:
    rows = _need(meta, "bates_map", list, meta_path)
    if not all(isinstance(row, dict) for row in rows):
        raise EvalSetError(f"{meta_path}: bates_map holds something that is not an object.")
    return tuple(
        BatesEntry(
            bates=str(_need(row, "bates", str, meta_path)),
            document=str(_need(row, "document", str, meta_path)),
            page=int(_need(row, "page", int, meta_path)),
            image_only=bool(row.get("image_only", False)),
            production=_optional_text(row, "production", meta_path),
            legend=_optional_text(row, "legend", meta_path),
        )
        for row in rows
    )


def _optional_text(data: Mapping[str, Any], key: str, where: Path | str, limit: int = 500) -> str:
    """An optional one-line string of at most `limit` characters ("" when left out)."""
    value = data.get(key, "")
    if not isinstance(value, str) or len(value) > limit or any(ord(c) < 32 for c in value):
        raise EvalSetError(f"{where}: {key!r} is not one line of at most {limit} characters.")
    return value


def _read_productions(meta: Mapping[str, Any], where: Path) -> tuple[ProductionSpec, ...] | None:
    """case.json's `productions`, read and checked one by one; None when it has none."""
    raw = meta.get("productions")
    if raw is None:
        return None
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_PRODUCTIONS:
        raise EvalSetError(f"{where}: 'productions' is a list of 1-{MAX_PRODUCTIONS} objects.")
    specs = []
    for number, item in enumerate(raw, 1):
        at = f"{where}: productions[{number}]"
        if not isinstance(item, dict):
            raise EvalSetError(f"{at} is not an object.")
        suffix = item.get("page_suffix_digits", 0)
        if not isinstance(suffix, int) or isinstance(suffix, bool) or not 0 <= suffix <= 6:
            raise EvalSetError(f"{at}: 'page_suffix_digits' is 0 (none) or 1-6.")
        documents = _need(item, "documents", list, at)
        if not documents or not all(isinstance(d, str) for d in documents):
            raise EvalSetError(f"{at}: 'documents' names at least one source file.")
        if len(set(documents)) != len(documents):
            raise EvalSetError(f"{at}: a document appears twice in one production.")
        specs.append(
            ProductionSpec(
                volume=_optional_text(item, "volume", at, 40) or f"EVAL{number:03d}",
                prefix=_need(item, "bates_prefix", str, at),
                start=_need(item, "bates_start", int, at),
                digits=_need(item, "bates_digits", int, at),
                documents=tuple(documents),
                page_suffix_digits=suffix,
                legend=_optional_text(item, "legend", at),
                party=_optional_text(item, "party", at, 40),
            )
        )
    if len({spec.volume for spec in specs}) != len(specs):
        raise EvalSetError(f"{where}: two productions have one volume name.")
    return tuple(specs)


def _check_productions(
    meta: Mapping[str, Any],
    productions: Sequence[ProductionSpec],
    documents: Sequence[str],
    where: Path,
) -> None:
    """Every production's documents are the case's; the first format's fields, where given
    beside `productions`, are the first production's."""
    known = set(documents)
    for spec in productions:
        for name in spec.documents:
            if name not in known:
                raise EvalSetError(f"{where}: {spec.volume} produces {name!r}, not in documents.")
    first = productions[0]
    for key, value in (
        ("bates_prefix", first.prefix),
        ("bates_start", first.start),
        ("bates_digits", first.digits),
    ):
        if key in meta and meta[key] != value:
            raise EvalSetError(f"{where}: {key!r} differs from the first production's.")


def _check_labels(
    bates_map: Sequence[BatesEntry], productions: Sequence[ProductionSpec], where: Path
) -> None:
    """Each bates_map label is a number of one production (its prefix, digits and page
    suffix) of one of its documents: never a legend or anything else beside the number."""
    by_volume = {spec.volume: spec for spec in productions}
    # Longest prefix first: "AB-2" before "AB".
    ordered = sorted(productions, key=lambda spec: len(spec.prefix), reverse=True)
    for entry in bates_map:
        if entry.production and entry.production not in by_volume:
            raise EvalSetError(f"{where}: {entry.bates} names no production {entry.production}.")
        candidates = [by_volume[entry.production]] if entry.production else ordered
        spec = next((p for p in candidates if _label_of(p, entry.bates)), None)
        if spec is None:
            raise EvalSetError(
                f"{where}: bates_map {entry.bates[:80]!r} is not a number of "
                f"{entry.production or 'any production'} (its prefix, digits and page suffix; "
                "a legend goes in 'legend', never in 'bates')."
            )
        if entry.document not in spec.documents:
            raise EvalSetError(
                f"{where}: {entry.bates} is of {entry.document}, not in {spec.volume}."
            )


def _label_of(spec: ProductionSpec, label: str) -> bool:
    suffix = rf"\.\d{{{spec.page_suffix_digits}}}" if spec.page_suffix_digits else ""
    return (
        re.fullmatch(rf"{re.escape(spec.prefix)}\d{{{spec.digits}}}{suffix}", label, re.ASCII)
        is not None
    )


def find_nth(text: str, sub: str, n: int) -> int:
    """Offset of the n-th (1-based) match of `sub`, overlapping matches allowed; -1 if none."""
    at = -1
    for _ in range(n):
        at = text.find(sub, at + 1)
        if at < 0:
            return -1
    return at


def _load_labels(case: Case, named: set[str]) -> Iterable[Label]:
    """The labels of labels.jsonl with their spans; `named` collects the drafts they name."""
    path = case.path / "labels.jsonl"
    texts: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
            draft, text, occurrence = str(row["draft"]), str(row["text"]), int(row["occurrence"])
            supported = row["supported"]
        except (ValueError, KeyError, TypeError) as exc:
            raise EvalSetError(f"{where}: not a label ({exc}).") from None
        if not isinstance(supported, bool):
            raise EvalSetError(f"{where}: 'supported' is {supported!r}, not true or false.")
        if draft not in texts:
            inside = (case.path / draft).resolve().is_relative_to(case.path.resolve())
            if not inside or not (case.path / draft).is_file():
                raise EvalSetError(f"{where}: draft {draft} is not in the case folder.")
            texts[draft] = case.draft_text(draft)
            named.add(draft)
        start = find_nth(texts[draft], text, occurrence)
        if start < 0:
            raise EvalSetError(f"{where}: {text!r} (occurrence {occurrence}) is not in {draft}.")
        end = start + len(text)
        if "start" in row and (row["start"], row.get("end")) != (start, end):
            raise EvalSetError(f"{where}: start/end disagree with text and occurrence.")
        yield Label(
            draft=case.draft_key(draft),
            kind=str(row.get("kind", "")),
            start=start,
            end=end,
            supported=supported,
            error=str(row.get("error") or "none"),
            text=text,
        )


def all_labels(cases: Sequence[Case]) -> list[Label]:
    return [label for case in cases for label in case.labels]


# --- 2. Pages without ingest -----------------------------------------------------------------


def fast_pages(case: Case) -> "list[PageRecord]":
    """PageRecords from page_text.jsonl and the Bates map, in Bates order: what a perfect ingest
    and OCR would freeze. Documents are numbered 1.. in production order; image-only pages are
    "ocr" (with no confidence: the ground-truth text has none), the rest "text_layer". A page
    that several productions stamped is one record with all its labels, in map order."""
    from apps.verification.index import PageRecord

    path = case.path / "page_text.jsonl"
    texts: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
                texts[str(row["bates"])] = str(row["text"])
            except (ValueError, KeyError, TypeError) as exc:
                raise EvalSetError(f"{path}:{number}: not a page ({exc}).") from None
    ids = {name: number for number, name in enumerate(case.documents, 1)}
    pages: dict[tuple[str, int], list[BatesEntry]] = {}
    for entry in case.bates_map:
        if entry.document not in ids:
            raise EvalSetError(f"{case.path}/case.json: {entry.bates} names {entry.document}.")
        pages.setdefault((entry.document, entry.page), []).append(entry)
    records = []
    for position, entries in enumerate(pages.values(), 1):
        first = entries[0]
        text = next((texts[e.bates] for e in entries if e.bates in texts), None)
        if text is None:
            raise EvalSetError(f"{path}: no text for {first.bates}.")
        ocr = any(e.image_only for e in entries) or first.document in case.image_only
        records.append(
            PageRecord(
                position=position,
                document_id=ids[first.document],
                filename=first.document,
                page_number=first.page,
                bates=tuple(e.bates for e in entries),
                text=text,
                source="ocr" if ocr else "text_layer",
                ocr_confidence=None,
                origin=case.origins[first.document],
            )
        )
    return records


# --- 3. Verifying ----------------------------------------------------------------------------

Extract = Callable[..., "list[Claim]"]
Verify = Callable[..., list[Any]]


def verify_case(
    case: Case,
    pages: "Sequence[PageRecord]",
    *,
    extract: Extract,
    verify: Verify,
    build_index: Callable[..., Any],
) -> list[FindingRow]:
    """Every draft of `case` checked against `pages`: one row per finding, in draft order. The
    case's other drafts are each draft's companions (a brief citing the exhibits of the
    declaration beside it), as the product's runs pass the case's other drafts."""
    from apps.verification.checks.context import Companion

    index = build_index(pages)
    texts = {draft: case.draft_text(draft) for draft in case.drafts}
    extracted: dict[str, list[Claim]] = {}

    def claims_of(draft: str) -> "list[Claim]":
        if draft not in extracted:
            extracted[draft] = extract(texts[draft], bates_prefixes=case.prefixes)
        return extracted[draft]

    rows: list[FindingRow] = []
    for draft in case.drafts:
        companions = [
            Companion(other, texts[other], functools.partial(claims_of, other))
            for other in case.drafts
            if other != draft
        ]
        findings = verify(texts[draft], claims_of(draft), index, companions=companions)
        for finding in findings:
            rows.append(finding_row(case.draft_key(draft), finding))
    return rows


def finding_row(draft: str, finding: Any) -> FindingRow:
    claim = finding.claim
    page = finding.page
    return FindingRow(
        draft=draft,
        start=int(claim.start),
        end=int(claim.end),
        status=str(finding.status),
        kind=README_KINDS.get(claim.kind, str(claim.kind)),
        check=str(finding.check),
        message=str(finding.message),
        text=str(claim.text),
        bates=list(page.bates) if page is not None else [],
    )


def write_findings(rows: Iterable[Mapping[str, object]], path: Path) -> int:
    count = 0
    with Path(path).open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def read_findings(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            missing = [k for k in ("draft", "start", "end", "status") if k not in row]
            if missing:
                raise EvalSetError(f"{path}:{number}: a finding lacks {', '.join(missing)}.")
            rows.append(row)
    return rows


# --- 4. Scoring ------------------------------------------------------------------------------


# --- The written form of a claim --------------------------------------------------------------

_NUMBER_WORD = re.compile(
    r"\b(?:" + "|".join([*numwords.UNITS, *numwords.TEENS, *numwords.TENS, "hundred",
    *numwords.SCALES]) + r")\b",
    re.IGNORECASE,
)  # fmt: skip
_ORDINAL_WORD = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
    r"|\w+teenth|twentieth|thirtieth)\b",
    re.IGNORECASE,
)
_CURRENCY_CODE = re.compile(r"(?:^|\s)[A-Z]{3}(?:\s|$)|^[A-Z]{3}\d")
_MONTH_WORD = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"


def _has(pattern: str) -> Callable[[str], bool]:
    return lambda text: re.search(pattern, text) is not None


def _in_words(text: str) -> bool:
    return bool(_NUMBER_WORD.search(text) or _ORDINAL_WORD.search(text))


# Per kind: its written forms, each with the test that tells it, the most telling first, and
# the form of a claim that passes none of them.
_FORMS: dict[str, tuple[tuple[tuple[str, Callable[[str], bool]], ...], str]] = {
    "amount": (
        (
            ("mixed figures and words", lambda t: bool(_NUMBER_WORD.search(t)) and _has(r"\d")(t)),
            ("in words", lambda t: bool(_NUMBER_WORD.search(t))),
            ("currency code", lambda t: bool(_CURRENCY_CODE.search(t))),
        ),
        "figures",
    ),
    "date": (
        (
            # whether its day is in words or in figures
            ("year in words", lambda t: _in_words(t) and not _has(r"\d{4}|/\d{2}\b|'\d{2}\b")(t)),
            ("day in words", _in_words),
            ("numeric", lambda t: re.fullmatch(r"\d{1,2}/\d{1,2}/\d{2,4}", t) is not None),
            (
                "day month year",
                lambda t: (
                    re.fullmatch(
                        rf"\d{{1,2}}(?:st|nd|rd|th)? (?:day of )?{_MONTH_WORD},? \d{{4}}", t
                    )
                    is not None
                ),
            ),
            ("ordinal figures", _has(r"\d(?:st|nd|rd|th)\b")),
        ),
        "month day, year",
    ),
    "bates": (
        (
            ("transcript page and line", _has(r"\b\d{1,3}:\d{1,2}\b")),
            ("several cites", lambda t: ";" in t),
            (
                "by title or file name",
                lambda t: _has(r"[a-z]{2}.*(?: at |, p\. )\d")(t) or '"' in t,
            ),
            ("range", _has(r"\d[-\u2013]\d+$")),
            ("page suffix", _has(r"\d\.\d{1,4}$")),
        ),
        "number",
    ),
    "case_citation": (
        (
            ("footnote pin", _has(r"\bn\.\s?\d")),
            ("California style", _has(r"\(\d{4}\)\s+\d+\s+Cal|\bat pp?\.")),
            # Id., Ibid., supra, or the Bluebook's short form: a name, the volume and reporter,
            # then "at" and the pin, without the first page and the parenthetical of a full cite.
            ("short form", lambda t: re.match(r"(?:Id\.|Ibid\.)", t) is not None or "supra" in t),
            (
                "short form",
                lambda t: _has(r"\d+\s+\S.*\bat\s+\d")(t) and not _has(r"\(.*\d{4}\)")(t),
            ),
        ),
        "full cite",
    ),
}


def written_form(kind: str, text: str) -> str:
    """How a claim of `kind` is written, read from its text alone (not by the verifier): the
    forms issue 28 names, so that each is scored on its own. One form per claim, the most
    telling first (`_FORMS`); a kind with no forms is its own form."""
    if kind not in _FORMS:
        return kind
    text = " ".join(text.split())
    rules, otherwise = _FORMS[kind]
    return next((form for form, test in rules if test(text)), otherwise)


class Score(TypedDict):
    labels: int
    supported_labels: int
    unsupported_labels: int
    findings: int
    flags: int
    needs_review: int
    recall: float | None
    precision: float | None
    false_flag_rate: float | None
    recall_by_error: dict[str, dict[str, float | int | None]]
    recall_by_kind: dict[str, dict[str, float | int | None]]
    by_form: dict[str, dict[str, float | int | None]]
    targets: dict[str, bool]
    targets_met: bool
    missed: list[dict[str, object]]
    wrong_flags: list[dict[str, object]]


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _overlaps(finding: Mapping[str, Any], label: Label) -> bool:
    return bool(finding["start"] < label.end and finding["end"] > label.start)


def score(labels: Sequence[Label], findings: Sequence[Mapping[str, Any]]) -> Score:
    """The README's rules (see the module docstring). A ratio with nothing to divide by is None."""
    flags_by_draft: dict[str, list[Mapping[str, Any]]] = {}
    flags = [f for f in findings if f["status"] in FLAG_STATUSES]
    for flag in flags:
        flags_by_draft.setdefault(str(flag["draft"]), []).append(flag)
    flagged = [
        any(_overlaps(f, label) for f in flags_by_draft.get(label.draft, ())) for label in labels
    ]
    unsupported = [i for i, label in enumerate(labels) if not label.supported]
    supported = [i for i, label in enumerate(labels) if label.supported]
    caught = [i for i in unsupported if flagged[i]]
    unsupported_by_draft: dict[str, list[Label]] = {}
    for i in unsupported:
        unsupported_by_draft.setdefault(labels[i].draft, []).append(labels[i])
    true_flags = [
        f
        for f in flags
        if any(_overlaps(f, label) for label in unsupported_by_draft.get(str(f["draft"]), ()))
    ]
    wrong = [f for f in flags if not any(f is t for t in true_flags)]
    by_error = _per(labels, unsupported, caught, key=lambda label: label.error)
    by_kind = _per(labels, unsupported, caught, key=lambda label: label.kind)
    recall = _ratio(len(caught), len(unsupported))
    precision = _ratio(len(true_flags), len(flags))
    false_flag_rate = _ratio(sum(1 for i in supported if flagged[i]), len(supported))
    targets = {
        "recall_every_error_kind": all(
            v["recall"] is not None and float(v["recall"]) >= TARGET_RECALL
            for v in by_error.values()
        ),
        "precision": precision is not None and precision >= TARGET_PRECISION,
        "false_flag_rate": false_flag_rate is not None
        and false_flag_rate <= TARGET_FALSE_FLAG_RATE,
    }
    return Score(
        labels=len(labels),
        supported_labels=len(supported),
        unsupported_labels=len(unsupported),
        findings=len(findings),
        flags=len(flags),
        needs_review=sum(1 for f in findings if f["status"] == "needs_review"),
        recall=recall,
        precision=precision,
        false_flag_rate=false_flag_rate,
        recall_by_error=by_error,
        recall_by_kind=by_kind,
        by_form=_by_form(labels, flagged),
        targets=targets,
        targets_met=all(targets.values()),
        missed=[_label_json(labels[i]) for i in unsupported if not flagged[i]],
        wrong_flags=[_flag_json(f, labels) for f in wrong],
    )


def _per(
    labels: Sequence[Label],
    unsupported: Sequence[int],
    caught: Sequence[int],
    *,
    key: Callable[[Label], str],
) -> dict[str, dict[str, float | int | None]]:
    totals = Counter(key(labels[i]) for i in unsupported)
    hits = Counter(key(labels[i]) for i in caught)
    return {
        name: {"caught": hits[name], "total": total, "recall": _ratio(hits[name], total)}
        for name, total in sorted(totals.items())
    }


def _by_form(
    labels: Sequence[Label], flagged: Sequence[bool]
) -> dict[str, dict[str, float | int | None]]:
    """Per "kind: written form": the unsupported labels caught (recall) and the supported ones
    flagged (the false-flag rate)."""
    counts: dict[str, Counter[str]] = {}
    for label, hit in zip(labels, flagged, strict=True):
        tally = counts.setdefault(
            f"{label.kind}: {written_form(label.kind, label.text)}", Counter()
        )
        side = "supported" if label.supported else "unsupported"
        tally[side] += 1
        tally[f"{side}_flagged"] += int(hit)
    return {
        form: {
            "unsupported": tally["unsupported"],
            "caught": tally["unsupported_flagged"],
            "recall": _ratio(tally["unsupported_flagged"], tally["unsupported"]),
            "supported": tally["supported"],
            "flagged": tally["supported_flagged"],
            "false_flag_rate": _ratio(tally["supported_flagged"], tally["supported"]),
        }
        for form, tally in sorted(counts.items())
    }


def _label_json(label: Label) -> dict[str, object]:
    return {
        "draft": label.draft,
        "start": label.start,
        "end": label.end,
        "kind": label.kind,
        "error": label.error,
        "text": label.text,
    }


def _flag_json(flag: Mapping[str, Any], labels: Sequence[Label]) -> dict[str, object]:
    """A flag that caught nothing, with the supported label it hit (if any)."""
    hit = next((lb for lb in labels if lb.draft == flag["draft"] and _overlaps(flag, lb)), None)
    return {
        **{k: flag.get(k) for k in ("draft", "start", "end", "status", "kind", "check", "text")},
        "message": flag.get("message"),
        "label": None if hit is None else _label_json(hit),
    }


def summary(result: Score, *, details: bool) -> dict[str, object]:
    """The printed JSON: figures and targets; the missed labels and wrong flags on request."""
    shown: dict[str, object] = {
        k: v for k, v in result.items() if details or k not in {"missed", "wrong_flags"}
    }
    shown["target_values"] = {
        "recall_every_error_kind": f">= {TARGET_RECALL}",
        "precision": f">= {TARGET_PRECISION}",
        "false_flag_rate": f"<= {TARGET_FALSE_FLAG_RATE}",
    }
    return shown
