"""Words a person reads on the pages (issue 25 req 6): a page's text source by its label for
what the file is, GPU memory and telemetry in units in the admin with plain names, a
model-written version naming the run and stage that wrote it, a stage's duration in minutes
and its role by its label, and a favicon on the app's and the admin's pages."""

import io
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import CallRecord, Gpu, GpuSample, GpuStatus, Host
from apps.documents import labels
from apps.documents import services as document_services
from apps.documents.models import Document, Page
from apps.drafting.models import Run, Stage
from apps.drafting.services import drafts as draft_services
from lexweb import words
from tests.conftest import session_client
from tests.drafting.makers import draft_of, packet_of, read_pdf

pytestmark = pytest.mark.django_db

GIB = 2**30


@pytest.fixture(autouse=True)
def _blobs(settings: Any, tmp_path: Path) -> None:
    """Every test stores its files in a blob root of its own."""
    settings.LEXWEB_BLOB_ROOT = tmp_path / "blobs"


# --- Where a page's text came from ---------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "kind", "expected"),
    [
        ("text_layer", "pdf", "the PDF's text layer"),
        ("ocr", "image", "OCR (Tesseract) of the page image"),
        ("text_file", "email", "the e-mail's text"),
        ("text_file", "outlook", "the Outlook message's text"),
        ("text_file", "word", "the Word document's text"),
        ("text_file", "spreadsheet", "the workbook's cells"),
        ("text_file", "text", "the text file"),
        ("text_file", "", "the file's own text"),
        ("none", "pdf", "no text"),
    ],
)
def test_a_pages_text_source_is_said_for_what_the_file_is(
    source: str, kind: str, expected: str
) -> None:
    assert labels.text_source(source, kind) == expected


def test_every_stored_text_source_has_words_of_its_own() -> None:
    for source in Page.Source.values:
        for kind in [*Document.Kind.values, ""]:
            said = labels.text_source(source, kind)
            assert source not in said and "Text file" not in said, (source, kind, said)


def test_the_viewer_of_an_email_says_its_text_is_the_emails(lawyer: User, case: Case) -> None:
    message = EmailMessage()
    message["From"] = "Client <client@acme.test>"
    message["To"] = "Counsel <counsel@firm.test>"
    message["Subject"] = "The lease"
    message.set_content("The landlord wrote again.")
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="lease.eml",
        source=io.BytesIO(message.as_bytes()),
        origin="client",
    )
    assert outcome.document is not None
    document_services.document_extract_text(document_id=outcome.document.pk)

    html = session_client(lawyer).get(f"/cases/{case.pk}/documents/{outcome.document.pk}/")

    text = html.content.decode()
    assert "<dt>Text from</dt><dd>The e-mail&#x27;s text</dd>" in text
    assert f"<dt>Size</dt><dd>{words.size(outcome.document.blob.size)}</dd>" in text
    assert "Text file" not in text and "text_file" not in text


# --- The admin: memory in units, no 16-digit floats, plain names -------------------------------


@pytest.fixture
def telemetry() -> Gpu:
    host = Host.objects.create(name="threadripper")
    gpu = Gpu.objects.create(host=host, index=0, name="NVIDIA H100", memory_bytes=80 * GIB)
    GpuStatus.objects.create(
        gpu=gpu,
        sampled_at=timezone.now(),
        utilisation_pct=37,
        memory_used_bytes=41_234_567_890,
        memory_total_bytes=80 * GIB,
        power_w=301.23456789012345,
    )
    GpuSample.objects.create(
        gpu=gpu,
        bucket_start=timezone.now(),
        bucket_seconds=300,
        utilisation_avg=42.123456789012345,
        memory_used_max_bytes=40 * GIB,
        power_avg_w=250.98765432109876,
    )
    CallRecord.objects.create(
        deployment_label="qwen-a on llama-board-a",
        board_label="board A",
        outcome=CallRecord.Outcome.OK,
        time_to_first_token_ms=1613.0000000000002,
        duration_ms=184_523.77777777778,
        decode_tokens_per_second=31.415926535897932,
        prefill_tokens_per_second=812.7182818284590,
    )
    return gpu


ADMIN_PAGES = [
    "/admin/",
    "/admin/cluster/gpu/",
    "/admin/cluster/gpustatus/",
    "/admin/cluster/gpusample/",
    "/admin/cluster/callrecord/",
]


def test_the_admin_shows_memory_in_units_and_measures_without_float_noise(
    admin_client_: Client, telemetry: Gpu
) -> None:
    pages = {path: admin_client_.get(path).content.decode() for path in ADMIN_PAGES}
    status = GpuStatus.objects.get(gpu=telemetry)
    sample = GpuSample.objects.get(gpu=telemetry)
    record = CallRecord.objects.get()
    pages["status"] = admin_client_.get(
        f"/admin/cluster/gpustatus/{status.pk}/change/"
    ).content.decode()
    pages["sample"] = admin_client_.get(
        f"/admin/cluster/gpusample/{sample.pk}/change/"
    ).content.decode()
    pages["record"] = admin_client_.get(
        f"/admin/cluster/callrecord/{record.pk}/change/"
    ).content.decode()

    assert "80.0 GiB" in pages["/admin/cluster/gpu/"]
    assert "38.4 GiB" in pages["/admin/cluster/gpustatus/"] and "301" in pages["status"]
    assert "Utilisation (%)" in pages["/admin/cluster/gpustatus/"]
    assert "Temperature (°C)" in pages["/admin/cluster/gpustatus/"]
    assert "Utilisation pct" not in pages["/admin/cluster/gpustatus/"]
    assert "42.1" in pages["/admin/cluster/gpusample/"] and "5 min" in pages["sample"]
    assert "1.6 s" in pages["/admin/cluster/callrecord/"] and "3 min 5 s" in pages["record"]
    for where, html in pages.items():
        for raw in ("85899345920", "41234567890", "42949672960", "0000000002", "1234567"):
            assert raw not in html, (where, raw)
        assert "415926" not in html and "98765" not in html, where


def test_the_admins_names_are_spelled_as_people_write_them(admin_client_: Client) -> None:
    html = admin_client_.get("/admin/").content.decode()

    for name in ("GPU statuses", "GPUs", "GPU links", "GPU samples", "API tokens"):
        assert f">{name}<" in html, name
    for wrong in ("statuss", "Gpu ", "Gpus", "healths", "Api tokens"):
        assert wrong not in html, wrong


# --- Model-written versions and a stage's duration ---------------------------------------------


def test_a_model_written_version_names_the_run_and_stage_that_wrote_it(
    lawyer: User, case: Case
) -> None:
    document = read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    draft = draft_of(case=case, user=lawyer, packet=packet, text="Counsel's own outline.")
    written = draft_services.version_add(
        user=lawyer,
        case_id=case.pk,
        draft_id=draft.pk,
        content=draft_services.pasted_content(text="The motion, as the model wrote it."),
        written_by="model",
    )
    run = Run.objects.create(
        case=case,
        kind=Run.Kind.MOTION,
        packet=packet,
        instructions="Draft the motion.",
        status=Run.Status.SUCCEEDED,
        draft=draft,
        created_by=lawyer,
    )
    Stage.objects.create(
        run=run,
        position=2,
        name=Stage.Name.REVISION,
        status=Stage.Status.SUCCEEDED,
        version=written,
        model_name="qwen2.5-14b",
        role="reasoner",
        duration_ms=184_523.77777777778,
        time_to_first_token_ms=1613.0000000000002,
    )
    client = session_client(lawyer)

    listing = client.get(f"/cases/{case.pk}/drafts/{draft.pk}/").content.decode()
    version = client.get(reverse("drafting:version", args=[case.pk, draft.pk, 2])).content.decode()
    run_page = client.get(f"/cases/{case.pk}/runs/{run.pk}/").content.decode()

    link = f'<a href="/cases/{case.pk}/runs/{run.pk}/">run {run.pk}</a>'
    said = f"Written by the revision stage of {link}"
    assert said in listing and said in version and "qwen2.5-14b" in listing
    assert "Pasted" in listing  # version 1, the lawyer's own
    assert "(pasted)" not in listing and "written by a model" not in listing
    assert "<dd>3 min 5 s</dd>" in run_page and "<dd>1.6 s</dd>" in run_page
    assert "184524" not in run_page and "1613 ms" not in run_page
    assert "role: heavy reasoner" in run_page and "role reasoner" not in run_page


# --- A favicon ------------------------------------------------------------------------------


def test_every_page_names_a_favicon_that_is_served(
    lawyer: User, admin_client_: Client, case: Case
) -> None:
    link = '<link rel="icon" href="/static/lexweb/favicon.svg" type="image/svg+xml">'
    assert link in session_client(lawyer).get("/").content.decode()
    assert link in Client().get("/accounts/login/").content.decode()
    assert link in admin_client_.get("/admin/").content.decode()
    found = finders.find("lexweb/favicon.svg")
    assert found and Path(str(found)).read_text().startswith("<svg")
