"""The browser pages of documents: the list with its upload form, the viewer and search."""

import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import services
from apps.documents.models import Blob, Derivation, Document
from apps.documents.selectors import MAX_QUERY_LENGTH
from tests.conftest import session_client
from tests.documents.files import scanned_pdf

pytestmark = pytest.mark.django_db

Jobs = Callable[[], None]


@pytest.fixture(autouse=True)
def _private_blob_root(settings: Any, tmp_path: Path) -> Path:
    """Originals of these tests go to a folder of their own, so that what is on disk can be
    checked exactly."""
    root = tmp_path / "blobs"
    settings.LEXWEB_BLOB_ROOT = root
    return root


def _stored_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _pdf(pages: list[str]) -> bytes:
    with pymupdf.open() as pdf:
        for text in pages:
            pdf.new_page().insert_text((72, 72), text, fontsize=11)
        return pdf.tobytes()


def _add(user: User, case: Case, name: str, data: bytes, origin: str = "client") -> Document:
    outcome = services.document_upload(
        case=case, uploaded_by=user, filename=name, source=io.BytesIO(data), origin=origin
    )
    assert outcome.document is not None, outcome.error
    return outcome.document


def _list_url(case: Case) -> str:
    return f"/cases/{case.pk}/documents/"


def _viewer_url(document: Document, page: int | None = None) -> str:
    url = f"/cases/{document.case_id}/documents/{document.pk}/"
    return url if page is None else f"{url}?page={page}"


def _search_url(case: Case) -> str:
    return f"/cases/{case.pk}/search/"


# --- The list ------------------------------------------------------------------------------


def test_case_page_links_to_documents_and_search(lawyer_client: Client, case: Case) -> None:
    body = lawyer_client.get(f"/cases/{case.pk}/").content.decode()

    assert f'href="{_list_url(case)}"' in body
    assert f'href="{_search_url(case)}"' in body


def test_list_shows_each_document_with_its_status_and_page_progress(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    _add(lawyer, case, "brief.pdf", _pdf(["one", "two", "three"]), origin="court")
    _add(lawyer, case, "note.txt", b"A note.\n")

    response = lawyer_client.get(_list_url(case))

    assert response.status_code == 200
    body = response.content.decode()
    assert "brief.pdf" in body and "note.txt" in body
    assert "Court" in body and "Client" in body
    assert 'class="badge doc-status-queued"' in body
    assert '<progress max="3" value="0"' in body
    assert "0 of 3 pages" in body
    # The live stream and the script's upload target are on the page.
    assert f'data-case-stream="/ws/cases/{case.pk}/events/"' in body
    assert f'data-upload-api="/api/v1/cases/{case.pk}/documents"' in body


def test_list_page_runs_a_fixed_number_of_queries(
    lawyer: User,
    lawyer_client: Client,
    case: Case,
    django_assert_max_num_queries: Any,
) -> None:
    message = _add(lawyer, case, "first.txt", b"first\n")
    for n in range(8):
        _add(lawyer, case, f"doc-{n}.txt", f"document {n}\n".encode())
    Derivation.objects.bulk_create(  # rows with a parent link
        Derivation(
            child=child,
            parent=message,
            transform="email-attachment",
            version="1",
            deterministic=True,
        )
        for child in Document.objects.filter(pk__gt=message.pk)
    )

    # The review list adds six, none per document: its tags, the page's ids, the capped
    # count, the rows' tags and the bulk menu's editable packets (their case, their rows);
    # provenance one more, the lawyers' flag clearings (issue 20 req 8).
    with django_assert_max_num_queries(17):
        response = lawyer_client.get(_list_url(case))

    assert response.status_code == 200
    assert response.content.decode().count("attachment of") == 8


@pytest.mark.django_db(databases="__all__")
@pytest.mark.slow
def test_list_shows_the_true_state_after_ingest(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    _add(lawyer, case, "brief.pdf", _pdf(["one", "two"]))
    _add(lawyer, case, "blank.pdf", _pdf([""]))

    run_jobs()
    body = lawyer_client.get(_list_url(case)).content.decode()

    assert body.count('class="badge doc-status-ready"') == 2
    assert "2 of 2 pages" in body
    # The blank page has no text and is flagged for review.
    assert re.search(r'<span class="badge badge--review">1<span class="visually-hidden">', body)


# --- Upload without JavaScript --------------------------------------------------------------


def test_upload_form_adds_the_good_file_and_reports_the_empty_one(
    lawyer_client: Client, case: Case, _private_blob_root: Path
) -> None:
    response = lawyer_client.post(
        _list_url(case),
        {
            "origin": "opposing",
            "files": [
                SimpleUploadedFile("letter.txt", b"Dear counsel,\n"),
                SimpleUploadedFile("empty.pdf", b""),
            ],
        },
    )

    assert response.status_code == 200
    body = response.content.decode()
    assert "<strong>1</strong> added" in body and "<strong>1</strong> not added" in body
    assert "Not added: The file is empty." in body
    document = Document.objects.get()
    assert (document.filename, document.origin) == ("letter.txt", "opposing")
    assert f'href="{_viewer_url(document)}"' in body
    # Nothing of the empty file remains: one blob row, one stored file, no temporaries.
    assert Blob.objects.count() == 1
    assert _stored_files(_private_blob_root) == [
        _private_blob_root
        / document.blob.sha256[:2]
        / document.blob.sha256[2:4]
        / document.blob.sha256
    ]


def test_upload_form_says_when_a_file_is_already_in_the_case(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    first = _add(lawyer, case, "original.txt", b"Same bytes\n")

    response = lawyer_client.post(
        _list_url(case),
        {"origin": "client", "files": [SimpleUploadedFile("copy.txt", b"Same bytes\n")]},
    )

    assert response.status_code == 200
    assert "Already in this case as" in response.content.decode()
    assert list(Document.objects.values_list("pk", flat=True)) == [first.pk]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"origin": "client"}, "Choose at least one file."),
        ({"origin": "stolen", "files": [SimpleUploadedFile("a.txt", b"a\n")]}, "not one of"),
        ({"origin": "client", "files": [SimpleUploadedFile("z.txt", b"")]}, "The file is empty."),
    ],
    ids=["no-files", "unknown-origin", "only-bad-files"],
)
def test_upload_form_that_adds_nothing_answers_400_and_stores_nothing(
    lawyer_client: Client,
    case: Case,
    data: dict[str, object],
    message: str,
    _private_blob_root: Path,
) -> None:
    response = lawyer_client.post(_list_url(case), data)

    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Document.objects.exists() and not Blob.objects.exists()
    assert _stored_files(_private_blob_root) == []


def test_upload_form_escapes_hostile_file_names(lawyer_client: Client, case: Case) -> None:
    response = lawyer_client.post(
        _list_url(case),
        {
            "origin": "client",
            "files": [SimpleUploadedFile("<img src=x onerror=alert(1)>.txt", b"x\n")],
        },
    )

    body = response.content.decode()
    assert "<img src=x" not in body
    assert "&lt;img src=x onerror=alert(1)&gt;.txt" in body


# --- The viewer ----------------------------------------------------------------------------


@pytest.mark.django_db(databases="__all__")
@pytest.mark.slow
def test_viewer_shows_ocr_page_with_image_source_confidence_and_audits_the_view(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(
        lawyer, case, "scan.pdf", scanned_pdf("ca7_order_in-re-fedex-ground_17-2400.pdf", pages=1)
    )
    run_jobs()
    page = document.pages.get(number=1)
    assert page.ocr_confidence is not None

    response = lawyer_client.get(_viewer_url(document))

    assert response.status_code == 200
    body = response.content.decode()
    assert document.blob.sha256 in body and "scan.pdf" in body
    assert (
        f'<img id="viewer-image" src="/api/v1/cases/{case.pk}/documents/{document.pk}'
        '/pages/1/image?dpi=150" alt="Page 1"'
    ) in body
    assert "OCR (Tesseract)" in body
    assert f"{page.ocr_confidence:.1f}%" in body
    assert 'id="page-1"' in body and '<pre class="page-text"' in body
    assert "seventh circuit" in " ".join(body.split()).lower()
    event = AuditEvent.objects.get(action="document.view")
    assert (event.actor_id, event.case_id, event.target_id) == (
        lawyer.pk,
        case.pk,
        str(document.pk),
    )


@pytest.mark.django_db(databases="__all__")
def test_viewer_shows_text_file_with_its_rendering_and_flags_pages_for_review(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "memo.txt", b"Line one\n\n  indented line two\n")
    blank = _add(lawyer, case, "blank.pdf", _pdf([""]))
    run_jobs()

    text_body = lawyer_client.get(_viewer_url(document)).content.decode()
    blank_body = lawyer_client.get(_viewer_url(blank)).content.decode()

    # The page image is the text's rendering to PDF (apps/documents/rendering.py).
    assert f"/documents/{document.pk}/pages/1/image?dpi=150" in text_body
    assert "rendered (1 page)" in text_body
    assert "The text file" in text_body
    assert "Line one\n\n  indented line two" in text_body
    assert "Needs review" not in text_body
    assert "No text" in blank_body and "Needs review" in blank_body


def test_viewer_of_an_e_mail_links_its_attachments_and_back(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    message = (
        b"From: a@example.com\r\nTo: b@example.com\r\nSubject: Papers\r\n"
        b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n"
        b"--XX\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n"
        b"--XX\r\nContent-Type: text/plain\r\n"
        b'Content-Disposition: attachment; filename="terms.txt"\r\n\r\n'
        b"The terms.\r\n--XX--\r\n"
    )
    email = _add(lawyer, case, "papers.eml", message)
    child = Document.objects.get(derived_from__parent=email)

    email_body = lawyer_client.get(_viewer_url(email)).content.decode()
    child_body = lawyer_client.get(_viewer_url(child)).content.decode()

    assert f'href="{_viewer_url(child)}">terms.txt</a>' in email_body
    assert f'href="{_viewer_url(email)}">papers.eml</a>' in child_body


def test_viewer_of_another_cases_document_is_404(
    lawyer: User, lawyer_client: Client, case: Case, outsider: User, other_case: Case
) -> None:
    theirs = _add(outsider, other_case, "theirs.txt", b"not yours\n")

    response = lawyer_client.get(f"/cases/{case.pk}/documents/{theirs.pk}/")

    assert response.status_code == 404
    assert "theirs.txt" not in response.content.decode()
    assert not AuditEvent.objects.filter(action="document.view").exists()


# --- Search --------------------------------------------------------------------------------


@pytest.mark.django_db(databases="__all__")
def test_search_shows_marked_snippets_and_escapes_the_documents_html(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    hostile = b"<script>alert(1)</script> needle <img src=x onerror=alert(1)> haystack\n"
    document = _add(lawyer, case, "page.txt", hostile)
    run_jobs()

    response = lawyer_client.get(_search_url(case), {"q": "needle"})
    viewer = lawyer_client.get(_viewer_url(document)).content.decode()

    assert response.status_code == 200
    body = response.content.decode()
    assert "<mark>needle</mark>" in body
    # PostgreSQL's headline drops well-formed tags but keeps a malformed one as text: it must
    # arrive escaped, never as markup.
    assert "&lt;img src=x onerror=alert" in body
    assert "<img src=x" not in body and "<script>alert" not in body
    # A hit on page 1 opens the page holding the first match (a rendered file's own page).
    hit = f"{_viewer_url(document)}?page=hit&amp;q=needle#viewer"
    assert f'href="{hit}">page.txt, page 1</a>' in body
    assert "Bates —" in body
    assert "1 result" in body
    # The viewer shows the whole page text, escaped.
    assert "&lt;script&gt;alert(1)&lt;/script&gt; needle &lt;img src=x" in viewer
    assert "<script>alert" not in viewer and "<img src=x" not in viewer


def test_search_escapes_the_query_it_shows_back(lawyer_client: Client, case: Case) -> None:
    response = lawyer_client.get(_search_url(case), {"q": "<script>alert(1)</script> needle"})

    body = response.content.decode()
    assert response.status_code == 200
    assert 'value="&lt;script&gt;alert(1)&lt;/script&gt; needle"' in body
    assert "<script>alert" not in body


@pytest.mark.django_db(databases="__all__")
def test_search_filters_by_origin_and_document(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    court = _add(lawyer, case, "order.txt", b"The contract was signed.\n", origin="court")
    client = _add(lawyer, case, "email.txt", b"Our contract is here.\n", origin="client")
    run_jobs()

    def found(**params: object) -> set[str]:
        response = lawyer_client.get(_search_url(case), {"q": "contract", **params})
        assert response.status_code == 200
        return set(re.findall(r">([\w.]+), page \d+</a>", response.content.decode()))

    assert found() == {"order.txt", "email.txt"}
    assert found(origin="court") == {"order.txt"}
    assert found(document=client.pk) == {"email.txt"}
    assert found(origin="court", document=client.pk) == set()
    assert court.pk != client.pk


def test_search_page_without_a_query_shows_only_the_form(lawyer_client: Client, case: Case) -> None:
    response = lawyer_client.get(_search_url(case))

    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="q"' in body and "result" not in body


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": "   "}, "Type something to search for."),
        ({"q": "x" * (MAX_QUERY_LENGTH + 1)}, f"at most {MAX_QUERY_LENGTH} characters"),
        ({"q": "needle", "origin": "nowhere"}, "Select a valid choice"),
        ({"q": "needle", "document": "987654321"}, "Select a valid choice"),
    ],
    ids=["blank", "too-long", "bad-origin", "foreign-document"],
)
def test_search_refuses_bad_input_with_a_message_and_400(
    lawyer_client: Client, case: Case, params: dict[str, str], message: str
) -> None:
    response = lawyer_client.get(_search_url(case), params)

    assert response.status_code == 400
    assert message in response.content.decode()


# --- Non-members ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "data"),
    [
        ("get", "/cases/{case}/documents/", {}),
        ("post", "/cases/{case}/documents/", {"origin": "client"}),
        ("get", "/cases/{case}/documents/{document}/", {}),
        ("get", "/cases/{case}/search/", {"q": "secret"}),
    ],
)
def test_outsider_gets_404_on_every_page_and_nothing_changes(
    lawyer: User, outsider: User, other_case: Case, case: Case, method: str, url: str, data: dict
) -> None:
    document = _add(lawyer, case, "secret.txt", b"the secret plan\n")
    client = session_client(outsider)
    before = (Document.objects.count(), AuditEvent.objects.count())
    if method == "post":
        data = {**data, "files": [SimpleUploadedFile("planted.txt", b"planted\n")]}

    response = getattr(client, method)(url.format(case=case.pk, document=document.pk), data)

    assert response.status_code == 404
    body = response.content.decode()
    assert "secret" not in body and case.title not in body and case.number not in body
    assert (Document.objects.count(), AuditEvent.objects.count()) == before
