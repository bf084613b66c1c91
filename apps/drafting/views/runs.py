"""The Runs tab, starting a run, the run page (its stages, streamed live) and a lawyer's
written decisions on a run (gate override, rejection)."""

import uuid
from collections.abc import Callable, Sequence
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.cases.shortcuts import case_or_404, request_user
from apps.drafting import selectors, stage_fallbacks
from apps.drafting.forms import (
    GateOverrideForm,
    RunFilterForm,
    RunForm,
    RunRejectForm,
)
from apps.drafting.models import Run, Stage
from apps.drafting.services import runs, transactions
from apps.drafting.views.drafts import frozen_packets
from apps.drafting.views.versions import STATES
from lexweb.errors import DomainError, NotFound

# --- Runs: the Runs tab, starting a run, the run page ----------------------------------------
# The run pages read through apps.drafting.selectors (membership checked, read audited) and
# change things only through apps.drafting.services.runs. static/lexweb/run.js follows the run's own
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
    """The form field a refusal of apps.drafting.services.runs.run_start is about (None: the
    request)."""
    return _RUN_FORM_FIELDS.get(runs.error_field(exc))


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def run_new(request: HttpRequest, case_id: int) -> HttpResponse:
    """GET: the form (kind, a frozen packet of the case, instructions, high-stakes). POST: queue
    the run (runs.run_start) and show its page; refusals come back in the form."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    packets = frozen_packets(request, case)
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
