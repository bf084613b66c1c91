"""Browser pages for a case's drafts: the Drafts tab (each draft with its latest version,
packet and verification state), creating a draft (pasted or uploaded, against a frozen packet),
the draft page (its versions, adding one, verifying one) and the version page: the text with
every claim highlighted by status, filters, the finding's panel with the source page image and
the matched words boxed, overrides and approval.

Every page reads through the `_for_user` selectors of apps.drafting and apps.verification
(membership checked, read audited) and every change goes through their services; a draft the
user cannot see is the same 404 as a missing one. Forms work without JavaScript (the filters
and the finding panel are query-string links); static/lexweb/draft.js opens the panel in
place, follows verification progress live and applies filters as they are ticked.
"""

import dataclasses
import itertools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast
from urllib.parse import quote, urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from apps.cases import selectors as case_selectors
from apps.cases.models import Case, Membership
from apps.cases.shortcuts import case_or_404, request_user
from apps.documents import viewer_selectors
from apps.drafting import (
    approval_services,
    diff_selectors,
    exports,
    margin_notes,
    runs,
    selectors,
    services,
    stage_fallbacks,
    transactions,
)
from apps.drafting.forms import (
    DiffForm,
    DraftForm,
    ExportForm,
    GateOverrideForm,
    OverrideForm,
    RunFilterForm,
    RunForm,
    RunRejectForm,
    VersionForm,
)
from apps.drafting.margin_notes import MarginNote
from apps.drafting.models import Draft, DraftVersion, Run, Stage
from apps.evidence.models import Packet
from apps.evidence.selectors import packets as packet_selectors
from apps.verification import selectors as verification_selectors
from apps.verification import services as verification_services
from apps.verification.models import Finding, Verification
from lexweb.errors import DomainError, NotFound

DRAFTS_PER_VIEW = 50
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


def _version_url(case_id: int, draft_id: int, number: int) -> str:
    return reverse(
        "drafting:version", kwargs={"case_id": case_id, "draft_id": draft_id, "number": number}
    )


# --- Drafts tab and creating a draft ---------------------------------------------------------


@login_required
@require_safe
def draft_list(request: HttpRequest, case_id: int) -> HttpResponse:
    """The case's drafts, newest first, each with its latest version, packet and the state of
    that version's verification."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    drafts = Paginator(
        selectors.draft_list_for_user(user=user, case_id=case.pk), DRAFTS_PER_VIEW
    ).get_page(request.GET.get("page"))
    latest = selectors.draft_latest_versions(list(drafts))
    states = selectors.version_states(list(latest.values()))
    rows = [
        (
            draft,
            latest.get(draft.pk),
            states.get(latest[draft.pk].pk) if draft.pk in latest else None,
        )
        for draft in drafts
    ]
    context = {"case": case, "drafts": drafts, "rows": rows}
    return render(request, "drafting/draft_list.html", context)


def _frozen_packets(request: HttpRequest, case: Case) -> list[tuple[int, str]]:
    packets = packet_selectors.packet_list_for_user(user=request_user(request), case_id=case.pk)
    return [
        (
            p.pk,
            f"{p.title} (version {p.version}, {p.page_count} "
            f"page{'s' if p.page_count != 1 else ''})",
        )
        for p in packets.filter(status=Packet.Status.FROZEN)
    ]


def _content(form: VersionForm) -> services.VersionContent:
    """The version's text from a valid form: the uploaded file, or the pasted text."""
    upload = form.upload()
    if upload is not None:
        limit = settings.LEXWEB_MAX_DRAFT_BYTES
        return services.uploaded_content(data=upload.read(limit + 1), filename=upload.name or "")
    return services.pasted_content(
        text=form.cleaned_data["text"],
        media_type=form.cleaned_data["media_type"] or DraftVersion.MediaType.MARKDOWN,
    )


def _form_status(form: VersionForm) -> int:
    return 413 if form.too_large else 400


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def draft_new(request: HttpRequest, case_id: int) -> HttpResponse:
    """GET: the form (title, kind, a frozen packet of the case, the text pasted or uploaded).
    POST: create the draft with its version 1, then show it."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    packets = _frozen_packets(request, case)
    bound = request.method == "POST"
    form = DraftForm(
        request.POST if bound else None, request.FILES if bound else None, packets=packets
    )
    status = 200
    if form.is_bound:
        if form.is_valid():
            try:
                draft = services.draft_create(
                    user=user,
                    case_id=case.pk,
                    title=form.cleaned_data["title"],
                    kind=form.cleaned_data["kind"],
                    packet_id=form.cleaned_data["packet"],
                    content=_content(form),
                )
            except NotFound as exc:  # the packet is not one of this case's
                form.add_error("packet", exc.message)
            except services.PacketNotFrozen as exc:
                form.add_error("packet", exc.message)
            except DomainError as exc:  # the text: empty, too large, not readable
                form.add_error("file" if form.upload() else "text", exc.message)
            else:
                messages.success(request, f"Draft “{draft.title}” created as version 1.")
                return redirect(_version_url(case.pk, draft.pk, 1))
        status = _form_status(form)
    context = {"case": case, "form": form, "has_packets": bool(packets)}
    return render(request, "drafting/draft_new.html", context, status=status)


# --- The draft page --------------------------------------------------------------------------


def _draft(request: HttpRequest, case: Case, draft_id: int) -> Draft:
    try:
        return selectors.draft_get_for_user(
            user=request_user(request), case_id=case.pk, draft_id=draft_id
        )
    except NotFound:
        raise Http404("No such draft.") from None


def _render_draft(
    request: HttpRequest,
    case: Case,
    draft: Draft,
    *,
    form: VersionForm | None = None,
    status: int = 200,
) -> HttpResponse:
    versions = list(draft.versions.all())
    states = selectors.version_states(versions)
    written_by = selectors.versions_written_by(versions)
    context = {
        "case": case,
        "draft": draft,
        "rows": [
            (version, states[version.pk], written_by.get(version.pk))
            for version in reversed(versions)
        ],
        "form": form or VersionForm(),
    }
    return render(request, "drafting/draft_detail.html", context, status=status)


@login_required
@require_safe
def draft_detail(request: HttpRequest, case_id: int, draft_id: int) -> HttpResponse:
    case = case_or_404(request, case_id)
    return _render_draft(request, case, _draft(request, case, draft_id))


@login_required
@require_POST
def version_add(request: HttpRequest, case_id: int, draft_id: int) -> HttpResponse:
    """The draft's next version, pasted or uploaded; errors come back in the form."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    draft = _draft(request, case, draft_id)
    form = VersionForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            version = services.version_add(
                user=user, case_id=case.pk, draft_id=draft.pk, content=_content(form)
            )
        except NotFound:
            raise Http404("No such draft.") from None
        except DomainError as exc:
            form.add_error("file" if form.upload() else "text", exc.message)
        else:
            messages.success(request, f"Version {version.number} added: verify it next.")
            return redirect(_version_url(case.pk, draft.pk, version.number))
    return _render_draft(request, case, draft, form=form, status=_form_status(form))


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
    return redirect(_version_url(case.pk, draft_id, number))


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
            url = _version_url(case.pk, draft_id, number)
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
    return redirect(_version_url(case.pk, draft_id, number))


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


# --- Runs: the Runs tab, starting a run, the run page ----------------------------------------
# The run pages read through apps.drafting.selectors (membership checked, read audited) and
# change things only through apps.drafting.runs. static/lexweb/run.js follows the run's own
# websocket (ws/cases/<case>/runs/<run>/events/?after=N) from the last event the page shows.

RUNS_PER_VIEW = 50
OPEN_STAGE = (Stage.Status.RUNNING, Stage.Status.QUEUED)
SKIPPED_OR_QUEUED = (Stage.Status.QUEUED, Stage.Status.SKIPPED)
# A financial table row's status as an icon beside its label (never colour alone).
ROW_ICONS = {
    **{state: icon for state, (icon, _label) in STATES.items()},
    "not_checked": "○",
    "not_verified": "…",
    "unmatched": "?",
}
ADVERSARY_KINDS = {
    "weak_point": "Weak point",
    "counter_argument": "Counter-argument",
    "unsupported_assertion": "Unsupported assertion",
}


def current_stage(stages: Sequence[Stage]) -> Stage | None:
    """The stage a run is at: the running one, else the first queued one, else the last one
    that ran (none for a run none of whose stages ran)."""
    for status in OPEN_STAGE:
        found = next((s for s in stages if s.status == status), None)
        if found is not None:
            return found
    ran = [s for s in stages if s.status not in SKIPPED_OR_QUEUED]
    return ran[-1] if ran else None


def _run_url(case_id: int, run_id: int) -> str:
    return reverse("drafting:run", kwargs={"case_id": case_id, "run_id": run_id})


@login_required
@require_safe
def run_list(request: HttpRequest, case_id: int) -> HttpResponse:
    """The case's runs, newest first: kind, status, who started it and when, its stage now;
    of one status and/or kind when the filters say so (kept by the page links)."""
    case = case_or_404(request, case_id)
    form = RunFilterForm(request.GET if {"status", "kind"} & set(request.GET) else None)
    filters = form.filters() if form.is_bound else {}
    page = Paginator(
        selectors.run_rows_for_user(user=request_user(request), case_id=case.pk, **filters),
        RUNS_PER_VIEW,
    ).get_page(request.GET.get("page"))
    rows = [(run, current_stage(list(run.stages.all()))) for run in page]
    context = {
        "case": case,
        "runs": page,
        "rows": rows,
        "filter_form": form,
        "filters": filters,
        "query": urlencode(filters),
    }
    return render(request, "drafting/run_list.html", context)


# The form field of each field of a run request (runs.error_field); others go above the form.
_RUN_FORM_FIELDS = {"kind": "kind", "packet_id": "packet", "instructions": "instructions"}


def _run_error_field(exc: DomainError) -> str | None:
    """The form field a refusal of apps.drafting.runs.run_start is about (None: the request)."""
    return _RUN_FORM_FIELDS.get(runs.error_field(exc))


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def run_new(request: HttpRequest, case_id: int) -> HttpResponse:
    """GET: the form (kind, a frozen packet of the case, instructions, high-stakes). POST: queue
    the run (runs.run_start) and show its page; refusals come back in the form."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    packets = _frozen_packets(request, case)
    bound = request.method == "POST"
    form = RunForm(
        request.POST if bound else None,
        packets=packets,
        initial={"key": uuid.uuid4().hex},
    )
    status = 200
    if form.is_bound:
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                run, created = runs.run_start(
                    user=user,
                    case_id=case.pk,
                    request=runs.RunRequest(
                        kind=data["kind"],
                        packet_id=data["packet"],
                        instructions=data["instructions"],
                        high_stakes=data["high_stakes"],
                    ),
                    idempotency_key=data["key"] or "",
                )
            except DomainError as exc:
                form.add_error(_run_error_field(exc), exc.message)
                status = 400 if isinstance(exc, NotFound) else exc.status
            else:
                if created:
                    messages.success(request, f"Run {run.pk} created.")
                else:
                    messages.info(request, f"This form already started run {run.pk}.")
                return redirect(_run_url(case.pk, run.pk))
    context = {"case": case, "form": form, "has_packets": bool(packets)}
    return render(request, "drafting/run_new.html", context, status=status)


def _stage_view(stage: Stage, live: dict[int, str]) -> dict[str, object]:
    """A stage as the timeline shows it."""
    data = stage.output_json if isinstance(stage.output_json, dict) else {}
    found = data.get("findings")
    findings: list[object] = found if isinstance(found, list) else []
    verified = stage.verification.version if stage.verification_id and stage.verification else None
    checks = stage.name in (Stage.Name.VERIFIER, Stage.Name.VERIFIER_AGAIN)
    cut = data.get("truncated")  # a writing stage's reply kept though cut (pipeline.endings)
    return {
        "stage": stage,
        "cut_why": str(cut.get("not_continued") or "") if isinstance(cut, dict) else "",
        "text": stage.output_text or live.get(stage.pk, ""),
        "streamed": not stage.output_text and stage.pk in live,
        "gate": data if stage.name == Stage.Name.GATE and "answer" in data else None,
        "adversary": [
            {**f, "label": ADVERSARY_KINDS.get(str(f.get("kind")), str(f.get("kind")))}
            for f in findings
            if isinstance(f, dict)
        ]
        if stage.name == Stage.Name.ADVERSARY
        else [],
        "verifier": data if checks else None,
        "verifier_findings": [
            {**f, "label": STATES.get(str(f.get("status")), ("", str(f.get("status"))))[1]}
            for f in findings
            if isinstance(f, dict)
        ]
        if checks
        else [],
        "verified_version": verified,
        "transactions": data.get("transactions")
        if isinstance(data.get("transactions"), list)
        else [],
    }


def _render_run(
    request: HttpRequest,
    case: Case,
    run_id: int,
    *,
    error: str = "",
    override_form: GateOverrideForm | None = None,
    reject_form: RunRejectForm | None = None,
    status: int = 200,
) -> HttpResponse:
    user = request_user(request)
    try:
        state = selectors.run_page_for_user(user=user, case_id=case.pk, run_id=run_id)
    except NotFound:
        raise Http404("No such run.") from None
    run = state.run
    lawyer = case_selectors.case_is_lawyer(user=user, case=case)
    table = transactions.table_of(run)
    fallbacks = stage_fallbacks.stage_fallbacks(state.stages)
    context = {
        "case": case,
        "run": run,
        "stages": [
            {**_stage_view(stage, state.live), "fallback": fallbacks.get(stage.pk)}
            for stage in state.stages
        ],
        "current": current_stage(state.stages),
        "last_seq": state.last_seq,
        "finished": run.status in Run.FINISHED,
        "stopped": run.status == Run.Status.STOPPED_BY_GATE,
        "lawyer": lawyer,
        "error": error,
        "override_form": override_form or GateOverrideForm(),
        "reject_form": reject_form or RunRejectForm(),
        "waiting": run.status == Run.Status.WAITING_FOR_APPROVAL,
        # The version the run's last writing stage stored (the one approval closes it on).
        "final_version": next(
            (stage.version for stage in reversed(state.stages) if stage.version_id), None
        ),
        "table": table,
        "table_rows": [(row, ROW_ICONS.get(row.status, "?")) for row in table.rows]
        if table
        else [],
    }
    if request.GET.get("part") == "1":  # the run's state alone, for run.js to put in place
        return render(request, "drafting/_run_state.html", context, status=status)
    return render(request, "drafting/run_detail.html", context, status=status)


@login_required
@require_safe
def run_detail(request: HttpRequest, case_id: int, run_id: int) -> HttpResponse:
    """The run page: status, the stage timeline (models, boards, tokens, speeds), the text of
    each stage (live while it streams), the gate's answer, the checks' and the reviewer's
    findings, cancel and the gate override."""
    case = case_or_404(request, case_id)
    return _render_run(request, case, run_id)


@login_required
@require_POST
def run_cancel(request: HttpRequest, case_id: int, run_id: int) -> HttpResponse:
    """Cancel the run (runs.run_cancel); one that already ended is a 409 shown on its page."""
    case = case_or_404(request, case_id)
    try:
        runs.run_cancel(user=request_user(request), case_id=case.pk, run_id=run_id)
    except NotFound:
        raise Http404("No such run.") from None
    except DomainError as exc:
        return _render_run(
            request, case, run_id, error=f"Not cancelled: {exc.message}", status=exc.status
        )
    messages.success(request, f"Run {run_id} cancelled.")
    return redirect(_run_url(case.pk, run_id))


@login_required
@require_POST
def run_gate_override(request: HttpRequest, case_id: int, run_id: int) -> HttpResponse:
    """A lawyer of the case lets a run the gate stopped go on, with a written reason; staff
    are refused (403), and every refusal comes back beside the form."""
    return _lawyers_decision(
        request,
        case_id,
        run_id,
        GateOverrideForm(request.POST),
        act=runs.run_gate_override,
        done="Gate overridden: the run goes on. The reason is kept.",
    )


@login_required
@require_POST
def run_reject(request: HttpRequest, case_id: int, run_id: int) -> HttpResponse:
    """A lawyer of the case rejects a run waiting for approval, with a written reason; staff
    are refused (403), and every refusal comes back beside the form."""
    return _lawyers_decision(
        request,
        case_id,
        run_id,
        RunRejectForm(request.POST),
        act=runs.run_reject,
        done=f"Run {run_id} rejected; its versions are marked rejected.",
    )


def _lawyers_decision(
    request: HttpRequest,
    case_id: int,
    run_id: int,
    form: GateOverrideForm | RunRejectForm,
    *,
    act: Callable[..., Run],
    done: str,
) -> HttpResponse:
    """A written decision on a run (`act(user=, case_id=, run_id=, reason=)`): on success a
    message and back to the run; a refusal comes back beside its form with its status."""
    case = case_or_404(request, case_id)
    status = 400
    if form.is_valid():
        try:
            act(
                user=request_user(request),
                case_id=case.pk,
                run_id=run_id,
                reason=form.cleaned_data["reason"],
            )
        except NotFound:
            raise Http404("No such run.") from None
        except DomainError as exc:
            form.add_error(None, exc.message)
            status = exc.status
        else:
            messages.success(request, done)
            return redirect(_run_url(case.pk, run_id))
    if isinstance(form, GateOverrideForm):
        return _render_run(request, case, run_id, override_form=form, status=status)
    return _render_run(request, case, run_id, reject_form=form, status=status)
