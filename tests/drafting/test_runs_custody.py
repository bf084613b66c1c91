"""A stage's evidence and chain of custody end to end: real PostgreSQL, a real Procrastinate
worker, fake llama-server and Ollama over HTTP. A packet bigger than the stage's context gets
the pages that match the instructions within a budget the backend's tokenizer counted; every
call the stage made links to it from the cluster's call records (which show only that id); the
model file's hash is kept where the backend reports it; the live speed is in tokens per second."""

import io
import json

import pymupdf
import pytest
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import Backend, CallRecord
from apps.documents import services as document_services
from apps.documents.models import Document
from apps.drafting.models import Run, RunEvent, Stage
from apps.evidence.models import Packet
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from lexweb_dev.fakebackend.ollama import blob_digest
from lexweb_dev.fakebackend.tokens import count_prompt_tokens, count_text_tokens
from tests.cluster.dispatch_fixtures import (
    backend_make,
    closed_port_url,
    deployment_make,
    route_make,
)
from tests.drafting import run_fixtures as rf
from tests.drafting.makers import packet_of

pytestmark = pytest.mark.django_db(transaction=True)

SUMMARY = "The tenant was served an eviction notice [ACME]."
FILLER = (
    "The minutes of the building committee record the weather, the lunch order, the state "
    "of the lift and the painting of the corridor on the third floor. "
) * 4
INSTRUCTIONS = "Summarise the eviction notice served on the tenant."


def _bundle(*, case: Case, user: User, pages: int, special: dict[int, str]) -> Document:
    with pymupdf.open() as pdf:
        for n in range(1, pages + 1):
            page = pdf.new_page()
            text = special.get(n, f"Page {n}. {FILLER}")
            page.insert_textbox(pymupdf.Rect(72, 72, 540, 760), text, fontsize=10)
        data = pdf.tobytes()
    outcome = document_services.document_upload(
        case=case, uploaded_by=user, filename="bundle.pdf", source=io.BytesIO(data), origin="client"
    )
    assert outcome.document is not None, outcome.error
    # Read in batches of pages, one job each: run them here.
    for _ in range(10):
        document_services.document_extract_text(document_id=outcome.document.pk)
        document = Document.objects.get(pk=outcome.document.pk)
        if document.status == Document.Status.READY:
            return document
    raise AssertionError(f"the bundle was not read: {document.status}")


def _big_packet(case: Case, user: User) -> Packet:
    special = {
        17: "Page 17. The landlord served an eviction notice on the tenant on 1 May 2024.",
        23: "Page 23. The tenant answered the eviction notice in writing.",
    }
    document = _bundle(case=case, user=user, pages=40, special=special)
    return packet_of(case=case, user=user, documents=[document])


def _summarizer(stage_run: Run) -> Stage:
    return stage_run.stages.get(name="summarizer")


@pytest.mark.slow
def test_a_packet_bigger_than_the_context_sends_the_matching_pages_counted_by_the_tokenizer(
    lawyer: User, case: Case
) -> None:
    packet = _big_packet(case, lawyer)
    settings = FakeSettings(kind="llama_cpp", tokens_per_second=400, reply=SUMMARY)
    with FakeBackend.in_thread(settings) as fake:
        deployment = deployment_make(
            backend_make(base_url=fake.base_url, board="board-sum"),
            model="summarizer-model",
            context_size=2048,
            parallel_slots=1,
        )
        route_make("summarizer", deployment)
        run = rf.start(
            user=lawyer, case=case, packet=packet, kind="summary", instructions=INSTRUCTIONS
        )
        with rf.ThreadWorker():
            run = rf.finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error
    stage = _summarizer(run)
    budget = stage.evidence_budget
    assert budget["selection"] == "ranked by full text search"
    assert budget["counted_by"] == "tokenizer" and budget["fallback_reason"] == ""
    assert budget["pages_total"] == 40 and budget["pages_matched"] == 2
    assert 2 <= budget["pages_sent"] < 40 and len(stage.pages_sent) == budget["pages_sent"]
    # The two pages about the notice are in, labelled; the prompt fits the slot with the reply.
    assert "“bundle.pdf” p. 17" in stage.pages_sent and "“bundle.pdf” p. 23" in stage.pages_sent
    assert "served an eviction notice on the tenant" in stage.prompt_text
    assert stage.prompt_tokens + 1024 <= 2048
    assert budget["used_tokens"] <= budget["budget_tokens"] - budget["margin_tokens"]
    # What the fake llama-server counted for the prompt is what the stage was told.
    assert stage.prompt_tokens == count_prompt_tokens(json.loads(stage.prompt_text))
    # The call record links to the stage; the stage to the call record.
    record = CallRecord.objects.get(stage=stage)
    assert stage.call_record == record and record.outcome == "ok"
    # Live speed: each batch of tokens carries the count and the tokens/s as streamed.
    batches = list(
        RunEvent.objects.filter(run=run, kind="stage.tokens")
        .order_by("seq")
        .values_list("payload", flat=True)
    )
    assert batches and batches[-1]["tokens"] == count_text_tokens(SUMMARY)
    assert [b["tokens"] for b in batches] == sorted(b["tokens"] for b in batches)
    assert any(isinstance(b["tokens_per_second"], float) for b in batches)
    # llama-server reports no hash of its model file (only its path).
    assert stage.model_file_sha256 == ""


@pytest.mark.slow
def test_on_ollama_the_budget_is_an_estimate_that_says_so_and_the_model_hash_is_kept(
    lawyer: User, case: Case
) -> None:
    packet = _big_packet(case, lawyer)
    settings = FakeSettings(
        kind="ollama", model="summarizer-model", tokens_per_second=400, reply=SUMMARY
    )
    with FakeBackend.in_thread(settings) as fake:
        backend = backend_make(base_url=fake.base_url, kind=Backend.Kind.OLLAMA, board="board-o")
        deployment = deployment_make(
            backend, model="summarizer-model", context_size=4096, parallel_slots=1
        )
        route_make("summarizer", deployment)
        run = rf.start(
            user=lawyer, case=case, packet=packet, kind="summary", instructions=INSTRUCTIONS
        )
        with rf.ThreadWorker():
            run = rf.finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error
    stage = _summarizer(run)
    assert stage.evidence_budget["counted_by"] == "estimate"
    assert "Ollama has no tokenizer endpoint" in stage.evidence_budget["fallback_reason"]
    assert "“bundle.pdf” p. 17" in stage.pages_sent and len(stage.pages_sent) < 40
    # What Ollama read of the prompt is within its num_ctx, with room for the reply.
    assert stage.prompt_tokens + 1024 <= 4096
    # The weights blob's digest from /api/show, not /api/tags' manifest digest.
    assert stage.model_file_sha256 == blob_digest("summarizer-model")


@pytest.mark.slow
def test_every_call_of_a_stage_links_to_it_and_a_failing_tokenizer_is_recorded(
    lawyer: User, case: Case
) -> None:
    packet = _big_packet(case, lawyer)
    settings = FakeSettings(kind="llama_cpp", tokens_per_second=400, reply=SUMMARY)
    with FakeBackend.in_thread(settings) as fake:
        # The first deployment of the route is down: its tokenizer cannot count, and its call
        # fails before anything streams, so the second one answers.
        down = deployment_make(backend_make(base_url=closed_port_url(), board="board-down"))
        up = deployment_make(
            backend_make(base_url=fake.base_url, board="board-up"), context_size=4096
        )
        route_make("summarizer", down, up)
        run = rf.start(
            user=lawyer, case=case, packet=packet, kind="summary", instructions=INSTRUCTIONS
        )
        with rf.ThreadWorker():
            run = rf.finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error
    stage = _summarizer(run)
    assert stage.evidence_budget["counted_by"] == "estimate"
    assert stage.evidence_budget["fallback_reason"].startswith("The tokenizer failed")
    records = list(CallRecord.objects.filter(stage=stage).order_by("pk"))
    assert [(r.deployment_id, r.outcome) for r in records] == [(down.pk, "error"), (up.pk, "ok")]
    assert stage.call_record == records[1] and stage.deployment == up


@pytest.mark.slow
def test_the_call_record_list_shows_the_stage_id_and_nothing_of_the_case(
    lawyer: User, case: Case, admin_client_: Client, outsider_api: Client, lawyer_api: Client
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    secret = "Secret instructions about the Widget settlement"
    with rf.site_running({"summarizer": SUMMARY}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary", instructions=secret)
        with rf.ThreadWorker():
            run = rf.finished(run)
    stage = _summarizer(run)
    record = CallRecord.objects.get(stage=stage)

    listing = admin_client_.get("/admin/cluster/callrecord/")
    detail = admin_client_.get(f"/admin/cluster/callrecord/{record.pk}/change/")

    for page in (listing, detail):
        assert page.status_code == 200
        body = page.content.decode()
        assert str(stage.pk) in body
        assert secret not in body and case.title not in body and "Lease agreement" not in body
        assert "/admin/drafting/" not in body  # no link into the case's material
    # The stage and its custody are for the case's members only.
    url = f"/api/v1/cases/{case.pk}/runs/{run.pk}"
    mine = lawyer_api.get(url).json()
    (summarizer,) = [s for s in mine["stages"] if s["name"] == "summarizer"]
    assert summarizer["call_record_id"] == record.pk
    assert summarizer["evidence_budget"]["counted_by"] == "tokenizer"
    assert outsider_api.get(url).status_code == 404


@pytest.mark.slow
def test_a_stage_deleted_with_its_run_leaves_its_call_records_unlinked(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running({"summarizer": SUMMARY}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        with rf.ThreadWorker():
            run = rf.finished(run)
    record = CallRecord.objects.get(stage=_summarizer(run))

    Run.objects.filter(pk=run.pk).delete()

    record.refresh_from_db()
    assert record.stage_id is None and record.outcome == "ok"
