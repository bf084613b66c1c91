"""The browser pages of drafting runs: the Runs tab, starting a run (a frozen packet of the
case, instructions, high-stakes), the run page (the stage timeline with models, boards, tokens
and speeds, each stage's text, the gate's answer, the checks' and the reviewer's findings),
cancelling, and a lawyer's override of the gate.

A non-member gets the same 404 as for a missing case and changes nothing; refusals come back
in the form or on the page with a message that says what to do. A reloaded page shows the
stored state (the text a running stage has streamed, from its stored events) and starts its
websocket after the last event it rendered."""

import re
from typing import Any

import pytest
from django.test import Client
from django.utils.html import escape
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.drafting.models import Run, Stage
from apps.drafting.services import events as event_writer
from apps.drafting.services import runs
from apps.drafting.views import runs as run_views
from apps.evidence.models import Packet
from tests.drafting.makers import draft_of, packet_of, read_pdf, verified
from tests.drafting.run_fixtures import frozen_packet, runs_for_tables

pytestmark = pytest.mark.django_db


@pytest.fixture
def packet(lawyer: User, case: Case) -> Packet:
    return frozen_packet(case=case, user=lawyer)


@pytest.fixture
def made(lawyer: User, case: Case, packet: Packet) -> dict[str, Run]:
    """Every role routed; a queued motion run (`run`) and one the gate stopped."""
    return runs_for_tables(case=case, user=lawyer, packet=packet, label="Views")


def _html(response: Any) -> str:
    return str(response.content.decode())


def _runs(case: Case, tail: str = "") -> str:
    return f"/cases/{case.pk}/runs/{tail}"


def _run(run: Run, tail: str = "") -> str:
    return f"/cases/{run.case_id}/runs/{run.pk}/{tail}"


def _field_error(html: str, field: str) -> str:
    """The text of the error list under form field `field`."""
    match = re.search(rf'id="id_{field}_error"[^>]*>(.*?)</ul>', html, re.DOTALL) or re.search(
        rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', html, re.DOTALL
    )
    assert match, f"no error under {field}"
    return re.sub(r"<[^>]+>", "", match.group(1)).strip()


# --- The Runs tab ---------------------------------------------------------------------------


def test_runs_tab_lists_each_run_with_kind_status_author_and_stage_now(
    lawyer_client: Client, lawyer: User, case: Case, made: dict[str, Run]
) -> None:
    response = lawyer_client.get(_runs(case))

    html = _html(response)
    assert response.status_code == 200
    assert 'aria-current="page">Runs</a>' in html
    for run in made.values():
        assert f'href="/cases/{case.pk}/runs/{run.pk}/">Run {run.pk}</a>' in html
    row = html[html.index(f'data-run="{made["run"].pk}"') :]
    row = row[: row.index("</tr>")]
    assert "Motion" in row and "Queued" in row and "Gate" in row and "Laura Lawyer" in row
    stopped = html[html.index(f'data-run="{made["stopped_run"].pk}"') :]
    assert "Stopped by the gate" in stopped[: stopped.index("</tr>")]
    assert AuditEvent.objects.filter(action="run.list", actor=lawyer).count() == 1


def _listed(html: str) -> set[int]:
    return {int(n) for n in re.findall(r'data-run="(\d+)"', html)}


def test_runs_tab_filters_by_status_and_kind_as_the_api_does_and_keeps_them_in_page_links(
    lawyer_client: Client, lawyer_api: Client, case: Case, made: dict[str, Run]
) -> None:
    Run.objects.filter(pk=made["run"].pk).update(kind=Run.Kind.SUMMARY)
    for query in (
        "status=stopped_by_gate",
        "kind=summary",
        "kind=motion&status=waiting_for_approval",
    ):
        page = lawyer_client.get(_runs(case, f"?{query}"))
        api = lawyer_api.get(f"/api/v1/cases/{case.pk}/runs?{query}").json()
        assert page.status_code == 200
        assert _listed(_html(page)) == {item["id"] for item in api["items"]} != set()
        assert "match" in _html(page) and "these filters" in _html(page)
    none = _html(lawyer_client.get(_runs(case, "?status=failed")))
    assert _listed(none) == set() and "No run matches these filters." in none
    # The page links keep the filters.
    many = [Run.objects.get(pk=made["stopped_run"].pk)]
    for _ in range(run_views.RUNS_PER_VIEW):
        copy = many[0]
        copy.pk = None
        copy.save()
    html = _html(lawyer_client.get(_runs(case, "?status=stopped_by_gate")))
    assert 'href="?status=stopped_by_gate&amp;page=2"' in html


def test_runs_tab_with_an_unknown_filter_says_so_and_lists_every_run(
    lawyer_client: Client, case: Case, made: dict[str, Run]
) -> None:
    response = lawyer_client.get(_runs(case, "?status=%3Cscript%3E&kind=" + "x" * 5000))
    html = _html(response)
    assert response.status_code == 200
    assert "Select a valid choice" in html and "<script>" not in html
    assert _listed(html) == {run.pk for run in made.values()}


# --- Access ---------------------------------------------------------------------------------


def test_non_member_gets_404_on_every_run_page_and_post_and_changes_nothing(
    outsider_client: Client, case: Case, packet: Packet, made: dict[str, Run]
) -> None:
    run, stopped = made["run"], made["stopped_run"]

    def state() -> object:
        return (
            list(Run.objects.order_by("pk").values_list("pk", "status", "gate_override_reason")),
            list(Stage.objects.order_by("pk").values_list("pk", "status")),
            ProcrastinateJob.objects.count(),
        )

    before = state()
    gets = [_runs(case), _runs(case, "new/"), _run(run), _run(run) + "?part=1"]
    posts = {
        _runs(case, "new/"): {"kind": "summary", "packet": packet.pk, "instructions": "Sum it."},
        _run(run, "cancel/"): {},
        _run(stopped, "gate-override/"): {"reason": "I say the grounds exist, trust me."},
    }
    for url in gets:
        response = outsider_client.get(url)
        assert response.status_code == 404, url
        assert case.title not in _html(response)
    for url, data in posts.items():
        response = outsider_client.post(url, data)
        assert response.status_code == 404, url
        assert case.title not in _html(response)
    assert state() == before


def test_a_run_of_another_case_is_a_404_on_this_cases_pages(
    lawyer_client: Client, lawyer: User, case: Case, made: dict[str, Run], other_case: Case
) -> None:
    from tests.factories import MembershipFactory

    MembershipFactory(case=other_case, user=lawyer, role="lawyer")
    run = made["run"]
    assert lawyer_client.get(f"/cases/{other_case.pk}/runs/{run.pk}/").status_code == 404
    response = lawyer_client.post(f"/cases/{other_case.pk}/runs/{run.pk}/cancel/")
    assert response.status_code == 404
    assert Run.objects.get(pk=run.pk).status == Run.Status.QUEUED


# --- Starting a run -------------------------------------------------------------------------


def test_new_run_form_lists_frozen_packets_and_starts_a_run_once_per_form(
    staff_client: Client, staff: User, lawyer: User, case: Case, packet: Packet, made: Any
) -> None:
    editable = packet_of(
        case=case,
        user=lawyer,
        documents=[read_pdf(case=case, user=lawyer, lines=["Draft note."], filename="n.pdf")],
        title="Still editable",
        freeze=False,
    )
    form = staff_client.get(_runs(case, "new/"))
    html = _html(form)
    assert form.status_code == 200
    assert f'<option value="{packet.pk}">' in html
    assert "Still editable" not in html
    key = re.search(r'name="key" value="([0-9a-f]{32})"', html)
    assert key, "the form carries a fresh idempotency key"
    data = {
        "kind": "affidavit",
        "packet": packet.pk,
        "instructions": "Draft the landlord's affidavit on the lease.",
        "high_stakes": "on",
        "key": key.group(1),
    }

    first = staff_client.post(_runs(case, "new/"), data)
    again = staff_client.post(_runs(case, "new/"), data)

    run = Run.objects.get(instructions=data["instructions"])
    assert first.status_code == again.status_code == 302
    assert first["Location"] == again["Location"] == f"/cases/{case.pk}/runs/{run.pk}/"
    assert (run.kind, run.high_stakes, run.created_by_id) == ("affidavit", True, staff.pk)
    # High-stakes: the heavy reasoner runs too.
    assert list(run.stages.values_list("name", flat=True))[:3] == ["gate", "drafter", "reasoner"]
    assert editable.status != Packet.Status.FROZEN


@pytest.mark.slow
def test_new_run_form_errors_say_what_is_wrong_and_start_nothing(
    lawyer_client: Client,
    lawyer: User,
    case: Case,
    packet: Packet,
    made: Any,
    other_case: Case,
    outsider: User,
    settings: Any,
) -> None:
    settings.LEXWEB_RUN_INSTRUCTIONS_MAX_CHARS = 200
    editable = packet_of(
        case=case,
        user=lawyer,
        documents=[read_pdf(case=case, user=lawyer, lines=["A note."], filename="e.pdf")],
        title="Editable record",
        freeze=False,
    )
    foreign = frozen_packet(case=other_case, user=outsider)
    good = {"kind": "motion", "packet": packet.pk, "instructions": "Draft a motion."}
    before = Run.objects.count()
    cases = [
        ({"packet": editable.pk}, "packet", "is not frozen"),
        ({"packet": foreign.pk}, "packet", f"No packet {foreign.pk} in this case."),
        ({"packet": ""}, "packet", "Choose the frozen packet the models read."),
        ({"instructions": ""}, "instructions", "The instructions are empty"),
        ({"instructions": "   \n  "}, "instructions", "The instructions are empty"),
        ({"instructions": "x" * 201}, "instructions", "the limit is 200"),
        ({"kind": "poem"}, "kind", "Select a valid choice"),
    ]
    for change, field, message in cases:
        response = lawyer_client.post(_runs(case, "new/"), {**good, **change})
        assert response.status_code == 400, change
        assert escape(message) in _field_error(_html(response), field), change
    assert Run.objects.count() == before


def test_new_run_without_a_deployment_for_a_role_says_so(
    lawyer_client: Client, lawyer: User, case: Case, packet: Packet
) -> None:
    # No role is routed at all on this site.
    response = lawyer_client.post(
        _runs(case, "new/"),
        {"kind": "summary", "packet": packet.pk, "instructions": "Summarise the lease."},
    )

    html = _html(response)
    assert response.status_code == 400
    assert 'class="alert alert--error" role="alert"' in html
    assert "No deployment is routed for the Summarizer role" in html
    assert not Run.objects.exists()


# --- The run page ---------------------------------------------------------------------------


def test_run_page_of_a_queued_run_shows_the_timeline_and_its_stream(
    staff_client: Client, staff: User, case: Case, made: dict[str, Run]
) -> None:
    run = made["run"]
    run.refresh_from_db()

    response = staff_client.get(_run(run))

    html = _html(response)
    assert response.status_code == 200
    names = re.findall(r'<h3 class="stage__name">\d+\. ([^<]+)</h3>', html)
    assert names == [
        "Gate",
        "Drafter",
        "Heavy reasoner",
        "Verifier",
        "Adversarial reviewer",
        "Revision",
        "Verifier again",
    ]
    assert f'data-run-stream="/ws/cases/{case.pk}/runs/{run.pk}/events/"' in html
    assert f'data-after="{run.event_seq}"' in html and run.event_seq >= 1
    assert f"<code>{run.stages.get(name='gate').queue}</code>" in html
    assert 'id="cancel-form"' in html
    assert "lexweb/run.js" in html
    assert AuditEvent.objects.filter(action="run.view", actor=staff).count() == 1


def test_a_reloaded_page_shows_the_stored_state_and_resumes_after_its_last_event(
    lawyer_client: Client, lawyer: User, case: Case, made: dict[str, Run]
) -> None:
    run = made["run"]
    gate = run.stages.get(name="gate")
    drafter = run.stages.get(name="drafter")
    Stage.objects.filter(pk=gate.pk).update(
        status="succeeded",
        attempt=1,
        output_text='{"answer": "yes"}',
        output_json={
            "answer": "yes",
            "reasons": ["The lease is in the record."],
            "missing_evidence": [],
        },
        deployment_label="gate-model on gpu-host-1",
        board_label="board 3 (V100 x2)",
        prompt_tokens=812,
        completion_tokens=41,
        time_to_first_token_ms=120.0,
        tokens_per_second=60.4,
        duration_ms=800.0,
    )
    Stage.objects.filter(pk=drafter.pk).update(status="running", attempt=2)
    Run.objects.filter(pk=run.pk).update(status="running")
    # An earlier attempt's text is not this attempt's; this one streamed two batches.
    event_writer.run_event_append(
        run=run,
        kind="stage.tokens",
        payload={"stage_id": drafter.pk, "attempt": 1, "offset": 0, "text": "Lost attempt. "},
    )
    event_writer.run_event_append(
        run=run,
        kind="stage.tokens",
        payload={"stage_id": drafter.pk, "attempt": 2, "offset": 0, "text": "The lease began "},
    )
    last = event_writer.run_event_append(
        run=run,
        kind="stage.tokens",
        payload={"stage_id": drafter.pk, "attempt": 2, "offset": 16, "text": "on 3 March 2024."},
    )

    response = lawyer_client.get(_run(run))

    html = _html(response)
    assert f'data-after="{last.seq}"' in html
    live = re.search(
        rf'<pre class="stage-text" data-live-stage="{drafter.pk}" data-attempt="2">(.*?)</pre>',
        html,
        re.DOTALL,
    )
    assert live and live.group(1) == "The lease began on 3 March 2024."
    assert "Lost attempt" not in html
    assert "The gate answered “yes”." in html and "The lease is in the record." in html
    assert "gate-model on gpu-host-1" in html and escape("board 3 (V100 x2)") in html
    assert "812 in, 41 out" in html and "120 ms" in html and "60.4 tokens/s" in html
    assert "800 ms" in html
    assert "at drafter (running)" in html

    part = lawyer_client.get(_run(run) + "?part=1")
    assert part.status_code == 200
    assert _html(part).lstrip().startswith('<div id="run-state"')
    assert "<html" not in _html(part)


def test_run_page_shows_the_verifiers_findings_with_a_link_and_the_reviewers(
    lawyer_client: Client, lawyer: User, case: Case, packet: Packet, made: dict[str, Run]
) -> None:
    run = made["run"]
    draft = draft_of(case=case, user=lawyer, packet=packet, text="The lease began in 2031.")
    verification, _ = verified(draft=draft, user=lawyer, statuses=["unsupported"])
    Stage.objects.filter(run=run, name="verifier").update(
        status="succeeded",
        verification=verification,
        output_json={
            "verification_id": verification.pk,
            "claims": 3,
            "blocking": 1,
            "findings": [
                {
                    "start": 0,
                    "end": 4,
                    "text": "2031",
                    "kind": "date",
                    "status": "needs_review",
                    "message": "No page has this date.",
                }
            ],
        },
    )
    Stage.objects.filter(run=run, name="adversary").update(
        status="succeeded",
        output_json={
            "findings": [
                {
                    "kind": "counter_argument",
                    "quote": "began in 2031",
                    "comment": "The tenant will say 2030.",
                    "start": 10,
                    "end": 23,
                },
                {
                    "kind": "weak_point",
                    "quote": "nowhere in it",
                    "comment": "Invented.",
                    "start": None,
                    "end": None,
                },
            ]
        },
    )

    html = _html(lawyer_client.get(_run(run)))

    assert "3 claims checked; <strong>1 blocking</strong>" in html
    link = f'href="/cases/{case.pk}/drafts/{draft.pk}/versions/1/">See version 1 with its findings'
    assert link in html
    assert "Needs review" in html and "No page has this date." in html
    assert "The reviewer raised 2 points" in html
    assert "Counter-argument" in html and "The tenant will say 2030." in html
    assert "(not the draft's words)" in html


# --- Cancel ---------------------------------------------------------------------------------


def test_staff_cancels_a_queued_run_and_a_second_cancel_is_a_409_on_the_page(
    staff_client: Client, staff: User, case: Case, made: dict[str, Run]
) -> None:
    run = made["run"]

    response = staff_client.post(_run(run, "cancel/"))

    assert response.status_code == 302 and response["Location"] == _run(run)
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and run.cancelled_by_id == staff.pk
    assert set(run.stages.values_list("status", flat=True)) == {"cancelled"}
    page = _html(staff_client.get(_run(run)))
    assert 'id="cancel-form"' not in page and "Cancelled by Sam Staff" in page

    again = staff_client.post(_run(run, "cancel/"))
    assert again.status_code == 409
    assert "Not cancelled: Run %d has already ended (cancelled)" % run.pk in _html(again)  # noqa: UP031


# --- Gate override --------------------------------------------------------------------------


def test_gate_override_is_a_lawyers_act_staff_see_it_disabled_and_are_refused(
    staff_client: Client, lawyer_client: Client, lawyer: User, case: Case, made: dict[str, Run]
) -> None:
    stopped = made["stopped_run"]
    reason = "Checked the lease by hand: the grounds exist."

    staff_page = _html(staff_client.get(_run(stopped)))
    assert "<fieldset disabled" in staff_page
    assert "Only a lawyer on this case may override the gate" in staff_page
    refused = staff_client.post(_run(stopped, "gate-override/"), {"reason": reason})
    assert refused.status_code == 403
    assert "Only a lawyer on this case may override the gate." in _html(refused)
    assert Run.objects.get(pk=stopped.pk).status == Run.Status.STOPPED_BY_GATE

    lawyer_page = _html(lawyer_client.get(_run(stopped)))
    assert "<fieldset disabled" not in lawyer_page and 'name="reason"' in lawyer_page
    short = lawyer_client.post(_run(stopped, "gate-override/"), {"reason": "Fine."})
    assert short.status_code == 400
    assert "Give a reason of 10 to 5000 characters" in _html(short)

    done = lawyer_client.post(_run(stopped, "gate-override/"), {"reason": reason})

    assert done.status_code == 302 and done["Location"] == _run(stopped)
    stopped.refresh_from_db()
    assert stopped.status == Run.Status.RUNNING
    assert (stopped.gate_override_by_id, stopped.gate_override_reason) == (lawyer.pk, reason)
    page = _html(lawyer_client.get(_run(stopped)))
    assert "Gate overridden" in page and escape(reason) in page
    assert 'id="gate-override"' not in page

    # A run the gate did not stop has nothing to override: 409, shown beside the form's place.
    queued = made["run"]
    conflict = lawyer_client.post(_run(queued, "gate-override/"), {"reason": reason})
    assert conflict.status_code == 409


# --- Refusals name their field ----------------------------------------------------------------


def test_each_refusal_of_a_run_start_names_its_field_and_code(
    lawyer: User, lawyer_api: Client, case: Case, packet: Packet, made: Any, settings: Any
) -> None:
    """The form puts a refusal beside the field the service names (runs.error_field), not by
    the message's wording; the API answers the same codes."""
    settings.LEXWEB_RUN_INSTRUCTIONS_MAX_CHARS = 50
    editable = packet_of(
        case=case,
        user=lawyer,
        documents=[read_pdf(case=case, user=lawyer, lines=["A note."], filename="f.pdf")],
        title="Editable",
        freeze=False,
    )
    good = {"kind": "motion", "packet_id": packet.pk, "instructions": "Draft a motion."}
    bad_text = (runs.InstructionsInvalid, "invalid_instructions", "instructions")
    cases = [
        ({"kind": "poem"}, "", runs.UnknownKind, "unknown_kind", "kind"),
        ({"packet_id": editable.pk}, "", runs.PacketNotFrozen, "packet_not_frozen", "packet_id"),
        ({"packet_id": 987654321}, "", runs.PacketNotFound, "not_found", "packet_id"),
        ({"instructions": " \n "}, "", *bad_text),
        ({"instructions": "x" * 51}, "", *bad_text),
        ({"instructions": "Go\x07on"}, "", *bad_text),
        ({"instructions": 7}, "", *bad_text),
        ({}, "k" * 201, runs.IdempotencyKeyInvalid, "invalid_idempotency_key", "idempotency_key"),
    ]  # fmt: skip
    before = Run.objects.count()
    for change, key, error, code, field in cases:
        request = runs.RunRequest(**{**good, **change})  # type: ignore[arg-type]
        with pytest.raises(error) as caught:
            runs.run_start(user=lawyer, case_id=case.pk, request=request, idempotency_key=key)
        assert (caught.value.code, runs.error_field(caught.value)) == (code, field), change
    assert Run.objects.count() == before

    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/runs",
        {**good, "packet_id": editable.pk},
        content_type="application/json",
    )
    assert (response.status_code, response.json()["code"]) == (400, "packet_not_frozen")


def test_a_refusal_about_no_field_goes_above_the_form(
    lawyer_client: Client, lawyer: User, case: Case, packet: Packet
) -> None:
    # Nothing is routed: the role has no deployment (RoleUnavailable names no field).
    with pytest.raises(runs.RoleUnavailable) as caught:
        runs.run_start(
            user=lawyer,
            case_id=case.pk,
            request=runs.RunRequest(kind="summary", packet_id=packet.pk, instructions="Sum."),
        )
    assert (caught.value.code, runs.error_field(caught.value)) == ("role_unavailable", "")

    response = lawyer_client.post(
        _runs(case, "new/"),
        {"kind": "summary", "packet": packet.pk, "instructions": "Summarise the lease."},
    )

    html = _html(response)
    assert response.status_code == 400
    alert = html[html.index('class="alert alert--error" role="alert"') :]
    assert "No deployment is routed for the Summarizer role" in alert[: alert.index("</div>")]
    assert 'id="id_instructions_error"' not in html and 'id="id_packet_error"' not in html
