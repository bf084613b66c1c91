"""Uploads go through the API into the store; a real worker reads every page."""

from collections.abc import Callable

import pytest
from django.test import Client

from apps.cases.models import Case
from apps.documents.models import Document, Page
from tests.documents.files import real, scanned_pdf, upload

pytestmark = pytest.mark.django_db(databases="__all__")


def _upload(client: Client, case: Case, *files: object, origin: str = "client") -> dict:
    response = client.post(
        f"/api/v1/cases/{case.pk}/documents", {"files": list(files), "origin": origin}
    )
    assert response.status_code in (201, 400), response.content
    return response.json()


def test_text_pdf_pages_come_from_the_text_layer_without_ocr(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    body = _upload(
        lawyer_api, case, upload("order.pdf", real("azd_order_bard-ivc-mdl_15-02641.pdf"))
    )
    assert body["created"] == 1

    run_jobs()

    document = Document.objects.get()
    assert (document.status, document.page_count, document.pages_done) == ("ready", 5, 5)
    pages = list(document.pages.order_by("number"))
    assert [p.source for p in pages] == ["text_layer"] * 5
    assert "Bard IVC Filters" in pages[1].text
    assert all(p.ocr_confidence is None for p in pages)


@pytest.mark.slow
def test_scanned_pdf_is_read_back_by_ocr_with_boxes_and_confidence(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    _upload(
        lawyer_api,
        case,
        upload("scan.pdf", scanned_pdf("ca7_order_in-re-fedex-ground_17-2400.pdf")),
    )

    run_jobs()

    page = Page.objects.get()
    assert page.source == "ocr"
    flat = " ".join(page.text.split()).lower()
    assert "fedex ground package system" in flat and "seventh circuit" in flat
    assert page.ocr_confidence is not None and page.ocr_confidence > 70
    word = page.words[0]
    assert isinstance(word[0], str) and all(isinstance(v, int) for v in word[1:5])


@pytest.mark.slow
def test_mixed_page_with_a_text_header_over_a_scanned_body_is_ocred(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    _upload(
        lawyer_api, case, upload("mixed.pdf", real("ca3_doc42_21-1298_mixed-text-image_p1.pdf"))
    )

    run_jobs()

    page = Page.objects.get()
    assert page.source == "ocr"
    assert "UNITED" in page.text


def test_same_bytes_twice_are_reported_not_stored_twice(lawyer_api: Client, case: Case) -> None:
    data = real("ca10_order_in-re-liebowitz_21-800.pdf")

    first = _upload(lawyer_api, case, upload("a.pdf", data))
    second = _upload(lawyer_api, case, upload("copy-of-a.pdf", data), upload("b.pdf", data))

    assert first["created"] == 1
    assert second["duplicates"] == 2 and second["created"] == 0
    assert second["results"][0]["document"]["id"] == first["results"][0]["document"]["id"]
    assert Document.objects.count() == 1
