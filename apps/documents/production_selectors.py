"""Reads of productions and the Bates index, filtered by the user's case memberships."""

import re
from dataclasses import dataclass

from django.db.models import Count, Prefetch, QuerySet

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.documents import bates
from apps.documents.models import BatesPage, Page, Production, ProductionExport
from lexweb.errors import Conflict, DomainError, NotFound
from lexweb.text import quoted

MAX_RANGE = 500
# The Bates index's column is a PostgreSQL bigint.
MAX_NUMBER = 2**63 - 1


def _productions(case: Case) -> QuerySet[Production]:
    return Production.objects.filter(case=case).select_related("output").order_by("-created_at")


def _production(*, case: Case, production_id: int) -> Production:
    production = (
        _productions(case).prefetch_related("items__document").filter(pk=production_id).first()
    )
    if production is None:
        raise NotFound(f"No production {production_id} in this case.")
    return production


def _export(*, production: Production, export_id: int) -> ProductionExport:
    export = (
        ProductionExport.objects.select_related("output", "production__case")
        .filter(pk=export_id, production=production)
        .first()
    )
    if export is None:
        raise NotFound(f"No export {export_id} of this production.")
    return export


def production_list_for_user(*, user: User, case_id: int) -> QuerySet[Production]:
    """The case's productions, newest first. Audited as one read of the list."""
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="production.list", case=case)
    return _productions(case)


def production_table_for_user(*, user: User, case_id: int) -> QuerySet[Production]:
    """The case's productions for its Productions tab, newest first: each with `item_count`
    (documents), its maker and its exports (newest first). Audited as one read of the list."""
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="production.list", case=case)
    exports = ProductionExport.objects.order_by("-created_at", "-id")
    return (
        _productions(case)
        .select_related("created_by")
        .annotate(item_count=Count("items"))
        .prefetch_related(Prefetch("exports", queryset=exports))
    )


def production_get_for_user(*, user: User, case_id: int, production_id: int) -> Production:
    """One production with its documents in order. Audited as a view of it."""
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    production = _production(case=case, production_id=production_id)
    read_audit.read_record(user=user, action="production.view", case=case, target=production)
    return production


def production_volume_for_user(*, user: User, case_id: int, production_id: int) -> Production:
    """The production whose stamped PDF is about to be sent (Conflict until it is stamped).
    Audited as a download."""
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    production = _production(case=case, production_id=production_id)
    if production.output is None:
        raise Conflict(f"Volume {production.volume} is not stamped yet ({production.status}).")
    read_audit.read_record(user=user, action="production.download", case=case, target=production)
    return production


@dataclass(frozen=True)
class BatesHit:
    bates: str
    volume: str
    document_id: int
    filename: str
    page_number: int
    kind: str
    text: str
    source: str
    ocr_confidence: float | None
    # Where the stamped page is: page `production_page` of production `production_id`'s
    # volume document (None until the production is stamped).
    production_id: int
    volume_document_id: int | None
    production_page: int


@dataclass(frozen=True)
class _Reference:
    """A Bates reference read: its prefix as in use, first and last number, and the page
    suffix written on each (None where none was: the whole document of a number that
    carries page suffixes)."""

    prefix: str
    first: int
    last: int
    first_page: int | None = None
    last_page: int | None = None


def _parse(reference: str, prefixes: list[str]) -> _Reference:
    """`ACME000014` or `ACME000014-ACME000016` (or `...-16`), each number optionally with a
    page suffix (`ABC000123.002`, `ABC000123.001-ABC000124.003`), read.

    1. As printed: a prefix in use followed by the digits (longest prefix first).
    2. Else with the separator at the prefix's end written otherwise or left out ("ACME 000014"
       or "ACME000014" for the prefix "ACME-"): the prefix in use of that key (bates.prefix_key).
    """
    cleaned = " ".join(reference.split()).replace("\u2013", "-")
    # Longest prefix first: "AB-2" must win over "AB" for "AB-2000001".
    ordered = sorted(prefixes, key=len, reverse=True)
    for written in (lambda p: re.escape(p), _loose):
        for prefix in ordered:
            head = written(prefix)
            pattern = rf"^{head}(\d+)(?:\.(\d+))?(?:\s*-\s*(?:{head})?(\d+)(?:\.(\d+))?)?$"
            # ASCII: "\d" would take other scripts' digits, and case folding would let the
            # Kelvin sign stand for "K".
            match = re.match(pattern, cleaned, flags=re.IGNORECASE | re.ASCII)
            if match:
                first = int(match.group(1))
                first_page = _page(match.group(2))
                if match.group(3) is None:  # one number (or one page): the range is itself
                    return _Reference(prefix, first, first, first_page, first_page)
                return _Reference(
                    prefix, first, int(match.group(3)), first_page, _page(match.group(4))
                )
    raise DomainError(
        f"{quoted(reference, 60)} is not a Bates number or range of this case "
        f"(prefixes in use: {_names(prefixes)})."
    )


def _page(digits: str | None) -> int | None:
    # No page suffix is longer than bates.MAX_PAGE_SUFFIX_DIGITS: a longer one names no page
    # (held at one past the highest, within the index's integer column).
    return None if digits is None else min(int(digits), 10**bates.MAX_PAGE_SUFFIX_DIGITS)


def _names(prefixes: list[str]) -> str:
    # A prefix ending with a space is quoted, so the space shows.
    return ", ".join(repr(p) if p != p.rstrip() else p for p in prefixes) or "none yet"


def _loose(prefix: str) -> str:
    """The prefix's core and any one separator or none ("ACME[-_. ]?" for "ACME ")."""
    return re.escape(bates.prefix_core(prefix)) + "[-_. ]?"


def _rows_of_key(case: Case, ref: _Reference, last: int) -> list[BatesPage]:
    """The index rows of numbers `ref.first`-`last` (pages from `ref.first_page` of the first,
    up to `ref.last_page` of the last, where given) under every prefix of `ref.prefix`'s key,
    one a label: the one of `ref.prefix` itself where two spellings carry a number (two
    productions made before prefixes of one key shared one sequence)."""
    rows = BatesPage.objects.filter(
        case=case,
        prefix__in=bates.prefix_spellings(bates.prefix_key(ref.prefix)),
        number__range=(ref.first, last),
    )
    if ref.first_page is not None:
        rows = rows.exclude(number=ref.first, page_suffix__lt=ref.first_page)
    if ref.last_page is not None:
        rows = rows.exclude(number=last, page_suffix__gt=ref.last_page)
    chosen: dict[tuple[int, int], BatesPage] = {}
    for row in rows.select_related("production", "document").order_by(
        "number", "page_suffix", "id"
    )[: MAX_RANGE * 4]:
        key = (row.number, row.page_suffix)
        if key not in chosen or row.prefix == ref.prefix:
            chosen[key] = row
    return list(chosen.values())[:MAX_RANGE]


def bates_lookup_for_user(*, user: User, case_id: int, reference: str) -> list[BatesHit]:
    """Pages for a Bates number or range, in number order. Unknown numbers are NotFound."""
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    if len(reference) > 100:
        raise DomainError("A Bates reference is at most 100 characters.")
    # order_by: BatesPage's default ordering would put `number` in the DISTINCT (a prefix a page).
    prefixes = list(
        BatesPage.objects.filter(case=case)
        .order_by("prefix")
        .values_list("prefix", flat=True)
        .distinct()
    )
    ref = _parse(reference, prefixes)
    first, last = ref.first, ref.last
    if (last, ref.last_page or 0) < (first, ref.first_page or 0):
        raise DomainError("A Bates range runs from the lower number to the higher one.")
    if last - first + 1 > MAX_RANGE:
        raise DomainError(f"Look up at most {MAX_RANGE} pages at once.")
    if first > MAX_NUMBER:
        # Well-formed, but past what the index can hold: no page carries it.
        raise NotFound(f"No page carries {reference.strip()[:60]} in this case.")
    rows = _rows_of_key(case, ref, min(last, MAX_NUMBER))
    if not rows:
        raise NotFound(f"No page carries {reference.strip()[:60]} in this case.")
    pages = {
        (p.document_id, p.number): p
        for p in Page.objects.filter(
            document_id__in={r.document_id for r in rows},
            number__in={r.page_number for r in rows},
        )
    }
    hits = []
    for row in rows:
        page = pages.get((row.document_id, row.page_number))
        hits.append(
            BatesHit(
                bates=row.production.bates(row.number, row.page_suffix),
                volume=row.production.volume,
                document_id=row.document_id,
                filename=row.document.filename,
                page_number=row.page_number,
                kind=row.document.kind,
                text=page.text if page else "",
                source=page.source if page else Page.Source.NONE,
                ocr_confidence=page.ocr_confidence if page else None,
                production_id=row.production_id,
                volume_document_id=row.production.volume_document_id,
                production_page=row.production_page,
            )
        )
    read_audit.read_record(
        user=user,
        action="bates.lookup",
        case=case,
        detail={"reference": reference.strip()[:100], "pages": len(hits)},
    )
    return hits


def export_get_for_user(
    *, user: User, case_id: int, production_id: int, export_id: int
) -> ProductionExport:
    """One export of a production (its state and settings). Audited as a view of it."""
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    production = _production(case=case, production_id=production_id)
    export = _export(production=production, export_id=export_id)
    read_audit.read_record(user=user, action="production.export_view", case=case, target=export)
    return export


def export_zip_for_user(
    *, user: User, case_id: int, production_id: int, export_id: int
) -> ProductionExport:
    """The export whose volume zip is about to be sent (Conflict until it is built). Audited
    as a download of the production."""
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    production = _production(case=case, production_id=production_id)
    export = _export(production=production, export_id=export_id)
    if export.output is None:
        raise Conflict(f"The volume is not built yet ({export.status}).")
    read_audit.read_record(
        user=user,
        action="production.export_download",
        case=case,
        target=production,
        detail={"export": export.pk},
    )
    return export
