"""The version page: the text with every claim highlighted by status, filters, the finding's
panel with the source page image and the matched words boxed; verifying, overrides, approval,
exports and diffs. static/lexweb/draft.js opens the panel in place, follows verification
progress live and applies filters as they are ticked."""

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast
from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from apps.cases import selectors as case_selectors
from apps.cases.models import Case, Membership
from apps.cases.shortcuts import case_or_404, request_user
from apps.documents import viewer_selectors
from apps.drafting import diff_selectors, margin_notes, selectors
from apps.drafting.forms import (
    DiffForm,
    ExportForm,
    OverrideForm,
)
from apps.drafting.margin_notes import MarginNote
from apps.drafting.models import DraftVersion
from apps.drafting.services import approval as approval_services
from apps.drafting.services import exports
from apps.drafting.views.drafts import version_url
from apps.verification import selectors as verification_selectors
from apps.verification import services as verification_services
from apps.verification.models import Finding, Verification
from lexweb.errors import DomainError, NotFound

IMAGE_DPI = 100

# What a claim shows as: its finding's status, or "overridden" for a blocking finding a
# lawyer let stand. Each has an icon and a label as well as a colour (never colour alone).
STATES: dict[str, tuple[str, str]] = {
    "supported": ("✓", "Supported"),
    "unsupported": ("✗", "Unsupported"),
    "contradicted": ("≠", "Contradicted"),
    "needs_review": ("?", "Needs review"),
    "overridden": ("✎", "Overridden"),
}
KINDS = dict(Finding.Kind.choices)


# --- The version page ------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """A finding as the page shows it."""

    finding: Finding
    state: str  # a key of STATES
    icon: str
    label: str
    kind: str
    was: str = ""  # an overridden finding's own status ("unsupported"), shown with it


@dataclass(frozen=True)
class Segment:
    """A run of the version's text, inside the innermost claim covering it (or none)."""

    text: str
    claim: Claim | None = None
    first: bool = False  # the claim starts here: its icon and label go here
    notes: tuple[int, ...] = ()  # the margin notes whose span covers this piece, by number
    note_starts: tuple[int, ...] = ()  # the notes whose span starts here: their marks go here


def _claim(finding: Finding) -> Claim:
    overridden = verification_selectors.finding_overridden(finding)
    state = "overridden" if overridden and finding.blocks else finding.status
    icon, label = STATES.get(state, ("•", state))
    was = finding.get_status_display().lower() if state == "overridden" else ""
    return Claim(finding, state, icon, label, KINDS.get(finding.kind, finding.kind), was)


def segments(text: str, claims: Sequence[Claim]) -> list[Segment]:
    """`text` cut at every claim's start and end; each piece belongs to the innermost claim
    that covers it (the shortest; a date inside a quotation is the date's). One sweep over the
    sorted boundaries: claims overlap little, so the set of open ones stays small."""
    size = len(text)
    spans = sorted(
        (
            (max(0, min(c.finding.start, size)), max(0, min(c.finding.end, size)), n, c)
            for n, c in enumerate(claims)
        ),
        key=lambda s: (s[0], s[1]),
    )
    spans = [s for s in spans if s[1] > s[0]]
    cuts = sorted({0, size, *(s[0] for s in spans), *(s[1] for s in spans)})
    out: list[Segment] = []
    open_: list[tuple[int, int, int, Claim]] = []
    started: set[int] = set()
    k = 0
    for a, b in itertools.pairwise(cuts):
        open_ = [s for s in open_ if s[1] > a]
        while k < len(spans) and spans[k][0] <= a:
            if spans[k][1] > a:
                open_.append(spans[k])
            k += 1
        if not open_:
            out.append(Segment(text[a:b]))
            continue
        inner = min(open_, key=lambda s: (s[1] - s[0], -s[0]))
        first = inner[2] not in started
        started.add(inner[2])
        out.append(Segment(text[a:b], inner[3], first))
    return out


def with_notes(pieces: Sequence[Segment], notes: Sequence[MarginNote]) -> list[Segment]:
    """`pieces` (from `segments`) cut again at each anchored margin note's start and end, and
    at its quote's other occurrences (`also`); each piece names the notes covering it, and the
    one where a note's own span starts names it in `note_starts`. A claim cut in two keeps its
    icon on its first piece only."""
    spans = [
        (start, end, n.number, own)
        for n in notes
        if n.start is not None and n.end is not None
        for start, end, own in ((n.start, n.end, True), *((a, b, False) for a, b in n.also))
    ]
    if not spans:
        return list(pieces)
    out: list[Segment] = []
    started: set[int] = set()
    at = 0
    for piece in pieces:
        end = at + len(piece.text)
        cuts = sorted({at, end, *(x for s in spans for x in s[:2] if at < x < end)})
        for a, b in itertools.pairwise(cuts):
            inside = [(num, own) for s, e, num, own in spans if s <= a and b <= e]
            covering = tuple(dict.fromkeys(num for num, _ in inside))
            starts = tuple(num for num, own in inside if own and num not in started)
            started.update(starts)
            out.append(
                dataclasses.replace(
                    piece,
                    text=piece.text[a - at : b - at],
                    first=piece.first and a == at,
                    notes=covering,
                    note_starts=starts,
                )
            )
        at = end
    return out


@dataclass(frozen=True)
class Filters:
    states: list[str]
    kinds: list[str]

    @classmethod
    def read(cls, query: QueryDict) -> "Filters":
        return cls(
            [s for s in query.getlist("status") if s in STATES],
            [k for k in query.getlist("kind") if k in KINDS],
        )

    def keep(self, claim: Claim) -> bool:
        return (not self.states or claim.state in self.states) and (
            not self.kinds or claim.finding.kind in self.kinds
        )

    def query(self, **extra: int) -> str:
        params = QueryDict(mutable=True)
        params.setlist("status", self.states)
        params.setlist("kind", self.kinds)
        for key, value in extra.items():
            params[key] = str(value)
        return params.urlencode()


def _selected_id(query: QueryDict) -> int | None:
    value = query.get("finding", "")
    return int(value) if value.isdigit() and 0 < int(value) < 2**63 else None


def _panel(request: HttpRequest, claim: Claim | None) -> dict[str, object]:
    """What the finding panel shows of the selected claim: its page image (with the size the
    boxes are measured in) when its page has one."""
    if claim is None:
        return {"selected": None}
    page = claim.finding.page
    size = None
    if page is not None and viewer_selectors.document_has_page_images(
        page.document, page.page_number
    ):
        size = verification_selectors.frozen_page_size(page) or viewer_selectors.rendered_page_size(
            page.document, page.page_number
        )
    return {
        "selected": claim,
        "page_size": size,
        "boxes": [
            (b[0], b[1], round(max(b[2] - b[0], 0), 2), round(max(b[3] - b[1], 0), 2))
            for b in claim.finding.boxes
            if isinstance(b, list) and len(b) == 4
        ],
        "image_dpi": IMAGE_DPI,
    }


def _render_version(
    request: HttpRequest,
    case: Case,
    draft_id: int,
    number: int,
    *,
    error: str = "",
    override_form: OverrideForm | None = None,
    override_for: int | None = None,
    selected_id: int | None = None,
    status: int = 200,
) -> HttpResponse:
    user = request_user(request)
    try:
        found = verification_selectors.findings_for_user(
            user=user, case_id=case.pk, draft_id=draft_id, number=number
        )
    except NotFound:
        raise Http404("No such version.") from None
    version = cast(DraftVersion, found.version)  # the verifier finds it with our lookup
    draft = version.draft
    filters = Filters.read(request.GET)
    claims = [_claim(finding) for finding in found.findings]
    shown = [claim for claim in claims if filters.keep(claim)]
    selected_id = selected_id or override_for or _selected_id(request.GET)
    selected = next((c for c in claims if c.finding.pk == selected_id), None)
    verification = found.verification
    notes = margin_notes.margin_notes(version)
    lawyer = case_selectors.case_is_lawyer(user=user, case=case)
    done = verification is not None and verification.status == Verification.Status.DONE
    membership = case_selectors.membership_get(user=user, case=case)
    exporter = membership is not None and membership.role in (
        Membership.Role.LAWYER,
        Membership.Role.STAFF,
    )
    context = {
        "case": case,
        "draft": draft,
        "packet": draft.packet,
        "version": version,
        "written_by": selectors.versions_written_by([version]).get(version.pk),
        "verification": verification,
        "pending": verification is not None
        and verification.status in (Verification.Status.QUEUED, Verification.Status.RUNNING),
        "blocking": found.blocking,
        "claims": claims,
        "shown": shown,
        "segments": with_notes(segments(version.text, shown), notes.anchored),
        "notes": notes,
        "counts": {s: sum(1 for c in claims if c.state == s) for s in STATES},
        "states": [(key, icon, label) for key, (icon, label) in STATES.items()],
        "kinds": list(KINDS.items()),
        "filters": filters,
        "filter_query": filters.query(),
        "lawyer": lawyer,
        "can_approve": lawyer
        and done
        and not found.blocking
        and not version.truncated
        and version.approved_at is None,
        "exporter": exporter,
        "can_export": exporter and done and not found.blocking and not version.truncated,
        "formats": [("docx", "Word (DOCX)"), ("pdf", "PDF")],
        "done": done,
        "error": error,
        "override_form": override_form or OverrideForm(),
        "override_for": override_for,
        **_panel(request, selected),
    }
    if request.GET.get("panel") == "1":  # the panel alone, for draft.js to put in place
        return render(request, "drafting/_finding_panel.html", context, status=status)
    return render(request, "drafting/version_detail.html", context, status=status)


@login_required
@require_safe
def version_detail(request: HttpRequest, case_id: int, draft_id: int, number: int) -> HttpResponse:
    """The version's text with its claims highlighted, the findings, filters (`?status=`,
    `?kind=`, repeatable), the selected finding's panel (`?finding=`), override and approve."""
    case = case_or_404(request, case_id)
    return _render_version(request, case, draft_id, number)


@login_required
@require_POST
def version_verify(request: HttpRequest, case_id: int, draft_id: int, number: int) -> HttpResponse:
    """Queue a verification (the job on the `cpu` queue); the page follows its progress."""
    case = case_or_404(request, case_id)
    try:
        verification = verification_services.verification_request(
            user=request_user(request), case_id=case.pk, draft_id=draft_id, number=number
        )
    except NotFound:
        raise Http404("No such version.") from None
    except DomainError as exc:
        return _render_version(
            request, case, draft_id, number, error=exc.message, status=exc.status
        )
    if verification.requested_by_id == request_user(request).pk:
        messages.success(request, "Verification requested: this page follows its progress.")
    else:
        messages.info(request, f"A verification of this version is {verification.status} already.")
    return redirect(version_url(case.pk, draft_id, number))


@login_required
@require_POST
def finding_override(
    request: HttpRequest, case_id: int, draft_id: int, number: int, finding_id: int
) -> HttpResponse:
    """A lawyer lets one blocking finding stand, with a written reason; staff are refused
    (403) and every refusal comes back beside the finding."""
    case = case_or_404(request, case_id)
    form = OverrideForm(request.POST)
    error, status = "", 400
    if form.is_valid():
        try:
            verification_services.finding_override(
                user=request_user(request),
                case_id=case.pk,
                draft_id=draft_id,
                number=number,
                finding_id=finding_id,
                reason=form.cleaned_data["reason"],
            )
        except NotFound:
            raise Http404("No such finding.") from None
        except DomainError as exc:
            error, status = exc.message, exc.status
        else:
            messages.success(request, "Override recorded: it is shown with the finding for good.")
            url = version_url(case.pk, draft_id, number)
            return redirect(f"{url}?finding={finding_id}#finding-panel")
    if error:
        form.add_error(None, error)
    return _render_version(
        request,
        case,
        draft_id,
        number,
        override_form=form,
        override_for=finding_id,
        status=status,
    )


@login_required
@require_POST
def version_approve(request: HttpRequest, case_id: int, draft_id: int, number: int) -> HttpResponse:
    """A lawyer approves the version; while anything blocks, the page says what."""
    case = case_or_404(request, case_id)
    try:
        approval_services.version_approve(
            user=request_user(request), case_id=case.pk, draft_id=draft_id, number=number
        )
    except NotFound:
        raise Http404("No such version.") from None
    except approval_services.UnsupportedFindings as exc:
        message = (
            f"Not approved: {exc.count} finding{'s' if exc.count != 1 else ''} "
            f"{'are' if exc.count != 1 else 'is'} unsupported or contradicted and not "
            "overridden. Correct the draft and add a version, or have a lawyer override each "
            "with a reason."
        )
        return _render_version(request, case, draft_id, number, error=message, status=409)
    except DomainError as exc:
        return _render_version(
            request,
            case,
            draft_id,
            number,
            error=f"Not approved: {exc.message}",
            status=exc.status,
        )
    messages.success(request, f"Version {number} approved.")
    return redirect(version_url(case.pk, draft_id, number))


@login_required
@require_POST
def version_export(request: HttpRequest, case_id: int, draft_id: int, number: int) -> HttpResponse:
    """The version as a DOCX or PDF attachment (exports.version_export: the approval rule, the
    file registered as a generated artifact first). A refusal comes back on the version page
    with the reason (409 while not verified or a finding blocks)."""
    case = case_or_404(request, case_id)
    form = ExportForm(request.POST)
    if not form.is_valid():
        return _render_version(
            request,
            case,
            draft_id,
            number,
            error="Not exported: choose Word (DOCX) or PDF.",
            status=400,
        )
    try:
        export = exports.version_export(
            user=request_user(request),
            case_id=case.pk,
            draft_id=draft_id,
            number=number,
            format=form.cleaned_data["format"],
        )
    except NotFound:
        raise Http404("No such version.") from None
    except DomainError as exc:
        return _render_version(
            request,
            case,
            draft_id,
            number,
            error=f"Not exported: {exc.message}",
            status=exc.status,
        )
    response = HttpResponse(export.data, content_type=export.media_type)
    response["Content-Disposition"] = attachment_header(export.filename)
    response["X-Lexweb-Artifact"] = str(export.artifact.pk)
    return response


def attachment_header(filename: str) -> str:
    ascii_name = filename.encode("ascii", "replace").decode().replace('"', "'").replace("?", "_")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename)}"


@login_required
@require_safe
def version_diff(request: HttpRequest, case_id: int, draft_id: int, number: int) -> HttpResponse:
    """What changed from version `?against=` (by default the one before) to this version, word
    by word: insertions in <ins>, deletions in <del>, each with a text marker as well as its
    style, long unchanged stretches shortened (diff_selectors, audited draft.version_diff; a
    page that shows no diff is audited as a view of the draft)."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    try:  # a missing draft or version shows nothing, and leaves no read row
        selectors.version_in_draft(
            draft=selectors.draft_in_case(case=case, draft_id=draft_id), number=number
        )
    except NotFound:
        raise Http404("No such version.") from None
    form = DiffForm(request.GET)
    diff, error, status = None, "", 200
    if not form.is_valid():
        error, status = "Choose a version of this draft to compare with.", 400
    elif form.cleaned_data["against"] is None and number == 1:
        error = "Version 1 has no earlier version: choose the version to compare it with."
    else:
        try:
            diff = diff_selectors.version_diff_for_user(
                user=user,
                case_id=case.pk,
                draft_id=draft_id,
                number=number,
                against=form.cleaned_data["against"],
            )
        except NotFound:
            error, status = "There is no such version of this draft to compare with.", 404
        except DomainError as exc:
            error, status = exc.message, 400
    # Read after the diff: its audit row covers this request; without a diff this is the row.
    draft = selectors.draft_get_for_user(user=user, case_id=case.pk, draft_id=draft_id)
    numbers = [v.number for v in draft.versions.all()]
    context = {
        "case": case,
        "draft": draft,
        "number": number,
        "others": [n for n in numbers if n != number],
        "against": diff.against if diff else form.cleaned_data.get("against") or None,
        "diff": diff,
        "error": error,
    }
    return render(request, "drafting/version_diff.html", context, status=status)
