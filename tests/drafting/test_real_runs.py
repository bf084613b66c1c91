"""Issue 29, requirement 1 (the tier) and its targets: whole runs on a real llama.cpp server,
driven through the REST API as an agent drives them. Evidence is uploaded and read, a packet is
built and frozen, and motions, affidavits, summaries and financial extractions are started; a gate
that says no is overridden with a reason. Every model role is routed to one real server
(tests/harness/llamacpp.py: the tiny random-weight model in its variant whose free replies end,
two slots of 4,096 tokens), and a real Procrastinate worker runs every stage.

The model writes gibberish: its structured replies are held to their schemas by the server's
grammar, and its free text ends after a hundred tokens or so, wherever its end-of-text token
first wins. So every run here ends because of what lexweb does with a real server's
answers, and each must end in a state whose reason is true and shown to the lawyer: on the run
page and in the run's API body, with no job lost and no backend address in any of it.

Requirement 10 (the verifier blocks what a real model invented): the model's vocabulary has a
few whole tokens that are claims the record does not hold (INVENTED: a date, an amount, a Bates
number, a quotation, a case citation), which its greedy replies write now and then. Whatever
the model wrote, every claim the verifier found in a version of the run that the frozen packet
does not hold (judged here from the stored text and the packet's pages, not from the findings)
is a blocking finding, and the version cannot be approved.
"""

import contextlib
import html
import io
import json
import re
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.cases.models import Case
from apps.cluster.models import CallRecord, RoleRoute
from apps.cluster.services import health
from apps.drafting.models import Run
from apps.evidence.models import FrozenPage
from apps.verification.models import Verification
from tests.cluster.dispatch_fixtures import backend_make, deployment_make, route_make
from tests.drafting import run_fixtures as rf
from tests.harness.llamacpp import LlamaCppServer, running_llamacpp, stop_llamacpp
from tests.harness.ports import free_port_below_ephemeral
from tests.harness.tiny_gguf import write_tiny_gguf

pytestmark = [
    pytest.mark.llamacpp,
    # Its server and its runs take a minute or more on a small CPU: in `make test`, not in
    # `make test-fast`.
    pytest.mark.product,
    pytest.mark.django_db(transaction=True),
]

SLOT_TOKENS = 4096
SLOTS = 2
ROLES = ("gate", "drafter", "reasoner", "adversary", "summarizer", "extractor")
# How long a run may take to settle. The never-ending model's motion writes three versions of
# up to the drafter's own draft limit (3,350 tokens since long drafts are reviewed in sections):
# it took 268 s, and over 300 s, on two cores at load 20-25 (2026-12-05). Under pytest's 600 s.
RUN_SECONDS = 480.0
# What the record says: a lease, its rent, and payments a financial extraction can list.
RECORD = [
    "Lease agreement between Acme Ltd and Widget LLC, signed on 3 March 2024.",
    "The monthly rent is $1,250.00, due on the first day of each month.",
    "Payments received: 1 April 2024 $1,250.00 from Widget LLC by wire transfer.",
    "1 May 2024 $1,250.00 from Widget LLC by wire transfer.",
    "No payment was received for June 2024; notice of default was sent on 10 June 2024.",
]
OVERRIDE = "The record has the lease and the notice; go on and let the verifier check it."
# Claims none of the record holds, whole tokens of the model's vocabulary (spaces around them,
# so the gibberish next to them never runs into them).
INVENTED = (
    " March 3, 2019 ",
    " $4,100,000 ",
    " (ACME000417) ",
    ' "the tenant waived every notice" ',
    " Smith v. Jones, 512 U.S. 218 (1994) ",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServer]:
    model = write_tiny_gguf(
        tmp_path_factory.mktemp("real-runs") / "tiny-ending.gguf", ending=True, claims=INVENTED
    )
    log = model.with_name("server.log")
    with running_llamacpp(
        model, log, context=SLOT_TOKENS * SLOTS, slots=SLOTS, alias="tiny"
    ) as served:
        yield served


@pytest.fixture
def routed(server: LlamaCppServer, db: None) -> None:
    """Every model role on the real server, its slots as it serves them; one health check, so
    the registry holds what the server says of itself (its context a slot)."""
    backend = backend_make(base_url=server.base_url, board="board-real", slots=SLOTS)
    deployment = deployment_make(
        backend, model="tiny", context_size=SLOT_TOKENS * SLOTS, parallel_slots=SLOTS
    )
    for role in ROLES:
        route_make(role, deployment)
    (row,) = async_to_sync(health.backends_health_check_all)()
    assert row.state == "ok", row.message


@pytest.fixture
def worker(routed: None) -> Iterator[rf.ThreadWorker]:
    with rf.ThreadWorker(concurrency=2) as running:
        yield running


def _record_pdf() -> bytes:
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        for n, line in enumerate(RECORD):
            page.insert_text((72, 72 + 16 * n), line, fontsize=11)
        return pdf.tobytes()


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.content[:2000]
    return response.json()


@pytest.fixture
def packet_id(lawyer_api: Client, case: Case, worker: rf.ThreadWorker) -> int:
    """A frozen packet of the uploaded record, all through the API (the worker reads it)."""
    base = f"/api/v1/cases/{case.pk}"
    upload = io.BytesIO(_record_pdf())
    upload.name = "lease-record.pdf"
    body = _ok(lawyer_api.post(f"{base}/documents", {"files": upload, "origin": "client"}), 201)
    document_id = body["results"][0]["document"]["id"]
    rf.eventually(
        lambda: _ok(lawyer_api.get(f"{base}/documents/{document_id}"))["status"] == "ready", 120
    )
    packet = _ok(
        lawyer_api.post(
            f"{base}/packets", {"title": "Lease record"}, content_type="application/json"
        ),
        201,
    )
    items = {"items": [{"document_id": document_id, "reason": "The lease and its payments"}]}
    _ok(
        lawyer_api.post(
            f"{base}/packets/{packet['id']}/items", items, content_type="application/json"
        ),
        201,
    )
    _ok(lawyer_api.post(f"{base}/packets/{packet['id']}/freeze"))
    return int(packet["id"])


def _start(api: Client, case: Case, packet_id: int, kind: str, instructions: str) -> int:
    body = {"kind": kind, "packet_id": packet_id, "instructions": instructions}
    started = _ok(
        api.post(f"/api/v1/cases/{case.pk}/runs", body, content_type="application/json"), 201
    )
    return int(started["id"])


def _settled(api: Client, case: Case, run_id: int) -> dict[str, Any]:
    """The run's API body once it is in a state it stays in (or stopped by its gate)."""
    settled = {*Run.FINISHED, Run.Status.STOPPED_BY_GATE}
    deadline = time.monotonic() + RUN_SECONDS
    while True:
        body: dict[str, Any] = _ok(api.get(f"/api/v1/cases/{case.pk}/runs/{run_id}"))
        if body["status"] in settled:
            return body
        assert time.monotonic() < deadline, f"the run did not settle: {_summary(body)}"
        time.sleep(0.5)


def _driven(
    api: Client, case: Case, packet_id: int, kind: str, instructions: str, *, client: Client
) -> tuple[dict[str, Any], list[str]]:
    """Start a run and drive it to its end as a lawyer would: a gate that says no is overridden
    with a reason. The run's last body and the states it was seen settled in."""
    run_id = _start(api, case, packet_id, kind, instructions)
    body = _settled(api, case, run_id)
    seen = [body["status"]]
    if body["status"] == Run.Status.STOPPED_BY_GATE:
        gate = next(s for s in body["stages"] if s["name"] == "gate")
        assert gate["status"] == "succeeded" and gate["output_json"]["answer"] != "yes"
        assert Run.Status.STOPPED_BY_GATE.label in _page(client, case, run_id)
        _ok(
            api.post(
                f"/api/v1/cases/{case.pk}/runs/{run_id}/gate-override",
                {"reason": OVERRIDE},
                content_type="application/json",
            )
        )
        body = _settled(api, case, run_id)
        seen.append(body["status"])
        assert body["gate_override_reason"] == OVERRIDE
    return body, seen


def _summary(body: dict[str, Any]) -> str:
    stages = [
        f"{s['name']}={s['status']}" + (f" ({s['error']})" if s["error"] else "")
        for s in body["stages"]
    ]
    return f"{body['status']} {body['error']!r}; " + ", ".join(stages)


def _page(client: Client, case: Case, run_id: int) -> str:
    response = client.get(f"/cases/{case.pk}/runs/{run_id}/")
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def _events(api: Client, case: Case, run_id: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        after = events[-1]["seq"] if events else 0
        page = _ok(api.get(f"/api/v1/cases/{case.pk}/runs/{run_id}/events?after={after}"))
        if not page["items"]:
            return events
        events += page["items"]


def _addresses(server: LlamaCppServer) -> list[str]:
    host_port = server.base_url.removeprefix("http://")
    return [server.base_url, host_port, f"localhost:{host_port.rsplit(':', 1)[1]}"]


def _assert_reason_true_and_shown(
    body: dict[str, Any], *, api: Client, client: Client, case: Case, server: LlamaCppServer
) -> None:
    """The run ended, says why where the lawyer looks, lost no job, names no address."""
    run_id = body["id"]
    assert body["status"] in Run.FINISHED, _summary(body)
    page = _page(client, case, run_id)
    label = Run.Status(body["status"]).label
    assert label in page, f"the run page does not say {label!r}"
    if body["status"] == Run.Status.FAILED:
        # The reason is the failed stage's, and the page shows it.
        failed = [s for s in body["stages"] if s["status"] == "failed"]
        assert failed and body["error"], _summary(body)
        assert body["error"] in page
        assert "database was unreachable" not in json.dumps(body)
    if body["status"] == Run.Status.WAITING_FOR_APPROVAL:
        assert body["draft_id"] is not None, _summary(body)
        checks = [s for s in body["stages"] if s["name"].startswith("verifier")]
        assert checks and all(s["status"] == "succeeded" for s in checks), _summary(body)
        assert all(s["verification_id"] for s in checks)
    # Every job of the run ended as its stage says: none failed or was lost to an exception.
    job_ids = [s["job_id"] for s in body["stages"] if s["job_id"]]
    assert not ProcrastinateJob.objects.filter(id__in=job_ids, status="failed").exists()
    # No backend address in what the lawyer or an agent sees: the run's body, its events,
    # its page.
    events = json.dumps(_events(api, case, run_id))
    for shown, where in ((json.dumps(body), "API body"), (events, "events"), (page, "page")):
        for address in _addresses(server):
            assert address not in shown, f"{address} in the run's {where}"


_MONTHS = [
    *("january", "february", "march", "april", "may", "june"),
    *("july", "august", "september", "october", "november", "december"),
]
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})\s+([A-Za-z]+)\s+(\d{4})\b")
_MONTH_DAY_YEAR = re.compile(r"\b([A-Za-z]+)\.?\s+(\d{1,2}),?\s+(\d{4})\b")
_AMOUNT = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
_BATES = re.compile(r"[A-Z]{2,10}[-_.]?\d{3,12}")
_WORD = re.compile(r"[a-z0-9]+")


def _dates(text: str) -> set[tuple[int, int, int]]:
    """Whole dates written "3 March 2024" or "March 3, 2024", as (year, month, day)."""
    found = set()
    for day, month, year in _DAY_MONTH_YEAR.findall(text):
        if month.lower() in _MONTHS:
            found.add((int(year), _MONTHS.index(month.lower()) + 1, int(day)))
    for month, day, year in _MONTH_DAY_YEAR.findall(text):
        if month.lower() in _MONTHS:
            found.add((int(year), _MONTHS.index(month.lower()) + 1, int(day)))
    return found


def _amounts(text: str) -> set[Decimal]:
    return {Decimal(amount.replace(",", "")) for amount in _AMOUNT.findall(text)}


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _held(kind: str, claim: str, pages: list[FrozenPage]) -> bool | None:
    """Whether the frozen packet holds a claim: its value (dates, amounts), its Bates numbers
    (record cites), its words in that order (quotations, citations, statutes); None where this
    cannot tell (a claim whose value it does not read, a record cite of another shape)."""
    text = "\n".join(page.text for page in pages)
    if kind == "date":
        dates = _dates(claim)
        return dates <= _dates(text) if dates else None
    if kind == "amount":
        amounts = _amounts(claim)
        return amounts <= _amounts(text) if amounts else None
    if kind == "record_cite":
        labels = _BATES.findall(claim)
        numbered = {label for page in pages for label in page.bates}
        return all(label in numbered or label in text for label in labels) if labels else None
    if kind in ("quote", "case_citation", "statute"):
        return _words(claim) in _words(text)
    return None


def _assert_what_was_invented_blocks(
    body: dict[str, Any], *, api: Client, case: Case, packet_id: int
) -> set[str]:
    """Every version the run's checks verified: each claim the verifier found in it that the
    frozen packet does not hold is a blocking finding, each of the INVENTED claims written in it
    lies within one, and a version with one cannot be approved (409 `unsupported_findings`).
    The INVENTED claims written and blocked."""
    pages = list(FrozenPage.objects.filter(packet_id=packet_id))
    base = f"/api/v1/cases/{case.pk}/drafts/{body['draft_id']}/versions"
    checked = [s["verification_id"] for s in body["stages"] if s["verification_id"]]
    blocked: set[str] = set()
    for verification_id in checked:
        number = Verification.objects.get(pk=verification_id).version.number
        version = _ok(api.get(f"{base}/{number}"))
        text = version["text"]
        found = _ok(api.get(f"{base}/{number}/findings"))
        assert found["verification"]["id"] == verification_id
        findings = found["findings"]
        for finding in findings:
            claim = finding["text"]
            assert text[finding["start"] : finding["end"]] == claim
            if _held(finding["kind"], claim, pages) is False:
                assert finding["blocks"], f"version {number}: {claim!r} passed: {finding}"
        spans = [(f["start"], f["end"]) for f in findings if f["blocks"]]
        for invented in (claim.strip() for claim in INVENTED):
            for written in re.finditer(re.escape(invented), text):
                assert any(
                    start < written.end() and written.start() < end for start, end in spans
                ), _unblocked(number, invented, written, text, findings)
                blocked.add(invented)
        if found["blocking"] or version["truncated"]:
            # A version cut at its limit is refused first, whatever its findings.
            refused = api.post(f"{base}/{number}/approve")
            assert refused.status_code == 409, refused.content[:2000]
            expected = "version_truncated" if version["truncated"] else "unsupported_findings"
            assert refused.json()["code"] == expected
            assert not _ok(api.get(f"{base}/{number}"))["approved"]
    return blocked


def _unblocked(
    number: int, invented: str, written: re.Match[str], text: str, findings: list[dict[str, Any]]
) -> str:
    """Why an invented claim is not blocked, with what the model wrote around it and the
    findings there: the model's text differs from run to run, so a failure keeps it."""
    start, end = max(0, written.start() - 300), written.end() + 200
    near = [
        (f["start"], f["end"], f["kind"], f["status"], f["check"], f["blocks"])
        for f in findings
        if f["start"] < end and f["end"] > start
    ]
    return (
        f"version {number}: {invented!r} at {written.start()} is not blocked; the text there: "
        f"{text[start:end]!r}; the findings there: {near}"
    )


MOTIONS = [
    "Draft a motion for summary judgment on the unpaid rent.",
    "Move to compel the defendant to produce its payment records.",
    "Draft a motion for default judgment: no rent was paid for June 2024.",
]
AFFIDAVITS = [
    "An affidavit of the landlord on the payments received.",
    "An affidavit of the bookkeeper on the wire transfers.",
    "An affidavit on the notice of default sent on 10 June 2024.",
]
SUMMARIES = ["Summarize the lease record.", "Summarize what was paid and what was not."]
EXTRACTIONS = [
    "List every payment received under the lease.",
    "Extract the wire transfers from Widget LLC.",
]


@pytest.mark.parametrize(
    ("kind", "instructions"),
    [
        *[("motion", text) for text in MOTIONS],
        *[("affidavit", text) for text in AFFIDAVITS],
    ],
)
def test_a_draft_reaches_waiting_for_approval_on_a_4096_token_slot(
    kind: str,
    instructions: str,
    lawyer_api: Client,
    lawyer_client: Client,
    case: Case,
    packet_id: int,
    server: LlamaCppServer,
) -> None:
    body, seen = _driven(lawyer_api, case, packet_id, kind, instructions, client=lawyer_client)

    _assert_reason_true_and_shown(
        body, api=lawyer_api, client=lawyer_client, case=case, server=server
    )
    assert body["status"] == Run.Status.WAITING_FOR_APPROVAL, _summary(body)
    # The tiny model's gate says no to every one of them: the override is what goes on.
    assert seen == [Run.Status.STOPPED_BY_GATE, Run.Status.WAITING_FOR_APPROVAL]
    blocked = _assert_what_was_invented_blocks(body, api=lawyer_api, case=case, packet_id=packet_id)
    # The model wrote claims of its own, and the verifier blocked them.
    assert blocked, "the run's versions hold none of the invented claims"


@pytest.mark.parametrize(
    ("kind", "instructions"),
    [*[("summary", text) for text in SUMMARIES], *[("financial", text) for text in EXTRACTIONS]],
)
def test_a_summary_or_an_extraction_ends_in_a_state_whose_reason_is_shown(
    kind: str,
    instructions: str,
    lawyer_api: Client,
    lawyer_client: Client,
    case: Case,
    packet_id: int,
    server: LlamaCppServer,
) -> None:
    body, seen = _driven(lawyer_api, case, packet_id, kind, instructions, client=lawyer_client)

    _assert_reason_true_and_shown(
        body, api=lawyer_api, client=lawyer_client, case=case, server=server
    )
    assert seen == [body["status"]]
    # What the verifier checked of it (nothing, where the run has no checks) blocks what the
    # packet does not hold.
    _assert_what_was_invented_blocks(body, api=lawyer_api, case=case, packet_id=packet_id)


# --- A model that never ends a reply ---------------------------------------------------------


@pytest.fixture(scope="module")
def never_ending(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServer]:
    """The tiny model in its variant whose free replies never end (as a base model's do): every
    drafter, heavy reasoner and revision reply runs to its limit."""
    model = write_tiny_gguf(
        tmp_path_factory.mktemp("never-ending") / "tiny.gguf", ending=False, claims=INVENTED
    )
    log = model.with_name("server.log")
    with running_llamacpp(
        model, log, context=SLOT_TOKENS * SLOTS, slots=SLOTS, alias="tiny"
    ) as served:
        yield served


def _routed_to(server: LlamaCppServer) -> None:
    """Every model role on `server` alone (after one health check)."""
    RoleRoute.objects.all().delete()
    backend = backend_make(base_url=server.base_url, board="board-never-ending", slots=SLOTS)
    deployment = deployment_make(
        backend, model="tiny", context_size=SLOT_TOKENS * SLOTS, parallel_slots=SLOTS
    )
    for role in ROLES:
        route_make(role, deployment)
    rows = async_to_sync(health.backends_health_check_all)()
    assert all(row.state == "ok" for row in rows), [row.message for row in rows]


@pytest.mark.parametrize(
    ("kind", "instructions"), [("motion", MOTIONS[0]), ("affidavit", AFFIDAVITS[0])]
)
def test_a_draft_a_model_never_ends_is_kept_truncated_verified_and_never_approved(
    kind: str,
    instructions: str,
    lawyer_api: Client,
    lawyer_client: Client,
    case: Case,
    packet_id: int,
    never_ending: LlamaCppServer,
) -> None:
    """Requirement 10 with a model that never ends a reply (the demo's packaged base model):
    each writing stage's reply is still cut after its continuation, and is kept as a version
    marked truncated that the verifier checks; the run waits for a lawyer, and no version of
    it can be approved (409 `version_truncated`)."""
    _routed_to(never_ending)
    body, seen = _driven(lawyer_api, case, packet_id, kind, instructions, client=lawyer_client)

    _assert_reason_true_and_shown(
        body, api=lawyer_api, client=lawyer_client, case=case, server=never_ending
    )
    assert body["status"] == Run.Status.WAITING_FOR_APPROVAL, _summary(body)
    assert seen[-1] == Run.Status.WAITING_FOR_APPROVAL
    base = f"/api/v1/cases/{case.pk}/drafts/{body['draft_id']}/versions"
    writing = [s for s in body["stages"] if s["name"] in ("drafter", "reasoner", "revision")]
    # The heavy reasoner writes for motions only (no run here is high-stakes).
    reasoner = ["reasoner"] if kind == "motion" else []
    assert [s["name"] for s in writing] == ["drafter", *reasoner, "revision"]
    for stage in writing:
        assert stage["status"] == "succeeded" and stage["finish_reason"] == "length", stage
        assert stage["output_json"]["truncated"]["tokens"] == stage["completion_tokens"]
        version = _ok(lawyer_api.get(f"{base}/{stage['version']}"))
        assert (version["truncated"], version["truncated_tokens"]) == (
            True,
            stage["completion_tokens"],
        )
    # The draft, written to the drafter's limit (over 2,048 tokens), does not fit the
    # revision's window whole (it reads the draft and writes it again): the revision read it in
    # sections, each call within the slot (docs/architecture/drafting.md, "Long drafts reviewed
    # in sections").
    revision = next(s for s in body["stages"] if s["name"] == "revision")
    parts = revision["evidence_budget"]["sections"]
    assert len(parts) >= 2 and len(json.loads(revision["prompt_text"])) == len(parts), parts
    records = CallRecord.objects.filter(stage_id=revision["id"])
    sent = [r for r in records if r.outcome != CallRecord.Outcome.REFUSED]
    assert len(sent) >= len(parts), [r.outcome for r in records]
    for record in sent:
        assert record.prompt_tokens + record.completion_tokens <= SLOT_TOKENS
    # A section's continuation may be refused before it is sent (the text so far, tokenized
    # again, counts more tokens than the model streamed, as in the restart test below):
    # nothing of it reached the server, and the stage says why that part stayed cut.
    for record in records.filter(outcome=CallRecord.Outcome.REFUSED):
        assert record.completion_tokens == 0 and record.prompt_tokens > 0, record
        assert (
            "did not fit the model's slot" in revision["output_json"]["truncated"]["not_continued"]
        ), revision["output_json"]
    # The verifier checked the cut versions: what the model invented in them blocks, and none
    # can be approved.
    blocked = _assert_what_was_invented_blocks(body, api=lawyer_api, case=case, packet_id=packet_id)
    assert blocked, "the run's versions hold none of the invented claims"
    page = _page(lawyer_client, case, body["id"])
    final = writing[-1]["version"]
    assert f'id="final-cut-v{final}"' in page
    assert "cut at its limit" in page


# --- A server restarted mid-stage -------------------------------------------------------------


def _drafter_call_open(api: Client, case: Case, run_id: int, served: LlamaCppServer) -> bool:
    """Whether the run's drafter is running and the server is at work on a call (a slot
    processing): the drafter's, as no other stage runs then."""
    body = _ok(api.get(f"/api/v1/cases/{case.pk}/runs/{run_id}"))
    drafter = next(s for s in body["stages"] if s["name"] == "drafter")
    assert drafter["status"] in ("pending", "queued", "running"), _summary(body)
    if drafter["status"] != "running":
        return False
    try:
        slots = httpx.get(f"{served.base_url}/slots", timeout=2).json()
    except httpx.HTTPError:
        return False
    return any(slot["is_processing"] for slot in slots)


def test_a_draft_whose_server_was_restarted_mid_stage_reaches_waiting_for_approval(
    lawyer_api: Client,
    lawyer_client: Client,
    case: Case,
    packet_id: int,
    tmp_path: Path,
    settings: SettingsWrapper,
) -> None:
    """Bad input: the real server is stopped (SIGTERM: it drops every open request) while the
    drafter's call is open, and started again on its port 3 s later. The drafter runs again on
    the same deployment once the server is back (after LEXWEB_STAGE_RETRY_SECONDS' waits), and
    the run reaches `waiting_for_approval`: no job lost, the retry said, no address shown. (On
    main before issue 29 such a run failed: "no deployment for the role is available now".)"""
    settings.LEXWEB_STAGE_RETRY_SECONDS = [5, 10, 20]
    # The variant that never ends a reply: the drafter's call takes a while to reach its limit,
    # so the server is stopped while it is open.
    model = write_tiny_gguf(tmp_path / "tiny.gguf", ending=False, claims=INVENTED)
    port = free_port_below_ephemeral()
    log = tmp_path / "server.log"

    def serve() -> contextlib.AbstractContextManager[LlamaCppServer]:
        context = SLOT_TOKENS * SLOTS
        return running_llamacpp(model, log, context=context, slots=SLOTS, alias="tiny", port=port)

    with serve() as first:
        _routed_to(first)
        run_id = _start(lawyer_api, case, packet_id, "affidavit", AFFIDAVITS[0])
        body = _settled(lawyer_api, case, run_id)
        assert body["status"] == Run.Status.STOPPED_BY_GATE, _summary(body)
        _ok(
            lawyer_api.post(
                f"/api/v1/cases/{case.pk}/runs/{run_id}/gate-override",
                {"reason": OVERRIDE},
                content_type="application/json",
            )
        )
        rf.eventually(lambda: _drafter_call_open(lawyer_api, case, run_id, first), 120)
        stop_llamacpp(first)
        stopped = time.monotonic()
    time.sleep(max(0.0, 3.0 - (time.monotonic() - stopped)))
    with serve() as again:
        body = _settled(lawyer_api, case, run_id)

        _assert_reason_true_and_shown(
            body, api=lawyer_api, client=lawyer_client, case=case, server=again
        )
    assert body["status"] == Run.Status.WAITING_FOR_APPROVAL, _summary(body)
    drafter = next(s for s in body["stages"] if s["name"] == "drafter")
    assert drafter["status"] == "succeeded" and drafter["attempt"] >= 2, drafter
    # Its first call was the one the stop cut; the stage said it would try again.
    records = CallRecord.objects.filter(stage_id=drafter["id"]).order_by("pk")
    assert records[0].outcome == CallRecord.Outcome.ERROR
    # The call made again succeeded; a continuation after it may be refused before it is sent
    # (the text so far, tokenized again, leaves its slot too little room: the stage keeps the
    # draft truncated and says so).
    outcomes = [record.outcome for record in records]
    assert outcomes[1] == CallRecord.Outcome.OK, outcomes
    assert set(outcomes[2:]) <= {CallRecord.Outcome.OK, CallRecord.Outcome.REFUSED}, outcomes
    assert {r.deployment_id for r in records} == {drafter["deployment_id"]}
    retrying = [e for e in _events(lawyer_api, case, run_id) if e["kind"] == "stage.retrying"]
    assert retrying and "Retrying (attempt 2 of 4) in 5 s." in retrying[0]["payload"]["error"]
