"""Rendered documents (text, e-mail, Word, Excel, Outlook) in the viewer, the hit boxes, the
new production page and the drafting finding panel: their pages are the rendition's, which
may be many more than the one page of text stored."""

import re
from collections.abc import Callable
from html import unescape

import pymupdf
import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import production_services, viewer_selectors
from apps.documents.models import Document, Rendition
from tests.documents.test_viewer import _add, _get, _hits, _hrefs
from tests.drafting.makers import draft_of, packet_of, verified

pytestmark = pytest.mark.django_db(databases="__all__")

Jobs = Callable[[], None]
# Lines enough for several rendered pages; one rare word far down, on a later page.
LINES = [f"Line {n:03d} of the long memo about ordinary things." for n in range(1, 241)]
LINES[199] = "Line 200 mentions the zeppelin contract once."
LONG_TEXT = ("\n".join(LINES) + "\n").encode()


def _rendered(user: User, case: Case, run_jobs: Jobs) -> tuple[Document, Rendition]:
    document = _add(user, case, "memo.txt", LONG_TEXT)
    run_jobs()
    rendition = Rendition.objects.get(document=document)
    assert rendition.status == Rendition.Status.READY, rendition.error
    assert rendition.page_count >= 3  # one stored page of text, several rendered
    assert document.pages.count() == 1
    return Document.objects.get(pk=document.pk), rendition


# --- 1. Navigating by the rendition's pages ------------------------------------------------


def test_a_rendered_text_file_pages_through_its_rendition_with_each_pages_own_text(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document, rendition = _rendered(lawyer, case, run_jobs)
    last = rendition.page_count
    base = f"/cases/{case.pk}/documents/{document.pk}/"

    status, first = _get(lawyer_client, document, page=1)
    status2, second = _get(lawyer_client, document, page=2)
    status_last, final = _get(lawyer_client, document, page=last)
    past, _ = _get(lawyer_client, document, page=last + 1)

    assert (status, status2, status_last, past) == (200, 200, 200, 404)
    # Thumbnails and the page box count the rendition's pages, each with its image.
    assert re.findall(r'data-thumb="(\d+)"', first) == [str(n) for n in range(1, last + 1)]
    assert f"of {last}</span>" in first and f'max="{last}"' in first
    for n in range(1, last + 1):
        assert f"/documents/{document.pk}/pages/{n}/image?thumb=1" in first
    assert _hrefs(first, "next-page") == [f"{base}?page=2#viewer"]
    assert _hrefs(second, "previous-page") == [f"{base}?page=1#viewer"]
    assert _hrefs(second, "next-page") == [f"{base}?page=3#viewer"]
    assert _hrefs(final, "next-page") == []
    # Page 2 shows the rendition's page 2 and its own text, not the whole stored text.
    assert f"/documents/{document.pk}/pages/2/image?dpi=150" in second
    assert 'id="page-2"' in second and "Line 001 " not in second
    assert "the rendering to PDF, page 2" in second
    assert "Page 2 of the original's rendering to PDF." in unescape(second)
    assert "Line 001 " in first and "Line 200 " not in first
    # Every page image the viewer links is served.
    image = f"/api/v1/cases/{case.pk}/documents/{document.pk}/pages/{last}/image?thumb=1"
    assert lawyer_client.get(image).status_code == 200


@pytest.mark.parametrize(
    ("status", "error", "said"),
    [
        (Rendition.Status.QUEUED, "", "No page images: being rendered"),
        (Rendition.Status.PROCESSING, "", "No page images: being rendered"),
        (
            Rendition.Status.FAILED,
            "LibreOffice could not read it",
            "No page images: rendering failed: LibreOffice could not read it",
        ),
        (
            Rendition.Status.UNAVAILABLE,
            "LibreOffice is not installed",
            "No page images: rendering unavailable: LibreOffice is not installed",
        ),
    ],
)
def test_without_a_ready_rendition_the_viewer_says_why_and_shows_the_stored_text(
    lawyer: User,
    lawyer_client: Client,
    case: Case,
    run_jobs: Jobs,
    status: str,
    error: str,
    said: str,
) -> None:
    document, _ = _rendered(lawyer, case, run_jobs)
    Rendition.objects.filter(document=document).update(
        status=status, error=error, output=None, page_count=0
    )

    code, body = _get(lawyer_client, document, q="zeppelin")
    past, _ = _get(lawyer_client, document, page=2)

    assert code == 200 and past == 404
    assert said in body
    # The stored text, whole (one page), and no image, thumbnails or hit boxes asked for.
    assert "Line 001 " in body and "Line 200 mentions the zeppelin" in body
    assert "viewer-image" not in body and "?thumb=1" not in body and "data-hits-url" not in body
    assert re.findall(r'data-thumb="(\d+)"', body) == ["1"]


def test_a_pdf_says_nothing_about_rendering(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    with pymupdf.open() as pdf:
        pdf.new_page().insert_text((72, 72), "A plain PDF page.")
        data = pdf.tobytes()
    document = _add(lawyer, case, "plain.pdf", data)
    run_jobs()

    _, body = _get(lawyer_client, document)

    assert "No page images" not in body and "the rendering to PDF" not in body


# --- 2. Hit boxes and the page a search hit opens ------------------------------------------


def test_hit_boxes_of_a_rendered_page_come_from_the_renditions_text_layer(
    lawyer: User, lawyer_api: Client, case: Case, run_jobs: Jobs
) -> None:
    document, rendition = _rendered(lawyer, case, run_jobs)
    on_page = viewer_selectors.rendered_page_of_first_hit(document, "zeppelin")
    assert on_page > 1

    status, found = _hits(lawyer_api, document, on_page, "zeppelins")  # stemmed, as search
    _, elsewhere = _hits(lawyer_api, document, 1, "zeppelin")
    _, line = _hits(lawyer_api, document, 1, "line")
    _, negated = _hits(lawyer_api, document, on_page, "-zeppelin")
    past, _ = _hits(lawyer_api, document, rendition.page_count + 1, "zeppelin")

    assert status == 200 and found["source"] == "rendition" and found["page"] == on_page
    assert len(found["boxes"]) == 1 and not found["truncated"]
    x0, y0, x1, y1 = found["boxes"][0]
    assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
    assert elsewhere["boxes"] == [] and negated["boxes"] == []
    assert len(line["boxes"]) > 20  # every line of page 1 starts with "Line"
    assert past == 404


def test_hit_boxes_of_a_rendered_document_refuse_outsiders_and_bad_queries(
    lawyer: User, lawyer_api: Client, outsider_api: Client, case: Case, run_jobs: Jobs
) -> None:
    document, _ = _rendered(lawyer, case, run_jobs)

    outsider, _ = _hits(outsider_api, document, 2, "zeppelin")
    empty, _ = _hits(lawyer_api, document, 2, "   ")
    huge = lawyer_api.get(
        f"/api/v1/cases/{case.pk}/documents/{document.pk}/pages/2/hits", {"q": "x" * 5000}
    )
    hostile, found = _hits(lawyer_api, document, 2, "\x00<script> -- \"unclosed 'x OR")

    assert outsider == 404
    assert empty == 400 and huge.status_code in (400, 422)
    assert hostile == 200 and isinstance(found["boxes"], list)


def test_a_search_hit_opens_the_rendered_page_holding_the_first_match(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document, _ = _rendered(lawyer, case, run_jobs)
    on_page = viewer_selectors.rendered_page_of_first_hit(document, "zeppelin")
    search = reverse("documents:search", kwargs={"case_id": case.pk})

    results = lawyer_client.get(search, {"q": "zeppelin"}).content.decode()
    link = f"/cases/{case.pk}/documents/{document.pk}/?page=hit&amp;q=zeppelin#viewer"
    status, opened = _get(lawyer_client, document, page="hit", q="zeppelin")
    _, missing = _get(lawyer_client, document, page="hit", q="nowhere")
    _, plain = _get(lawyer_client, document, page=1, q="zeppelin")

    assert link in results
    assert status == 200 and f'id="page-{on_page}"' in opened
    assert "zeppelin" in opened.split('class="page-text"', 1)[1]
    # Paging back from the hit reaches page 1 itself: only ?page=hit looks for the match.
    assert 'id="page-1"' in missing and 'id="page-1"' in plain
    assert viewer_selectors.rendered_page_of_first_hit(document, "x" * 5000) == 1


# --- 3. The new production page ------------------------------------------------------------


def test_the_new_production_page_counts_a_rendered_documents_rendered_pages(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document, rendition = _rendered(lawyer, case, run_jobs)
    new = reverse("documents:production_new", kwargs={"case_id": case.pk})

    body = lawyer_client.get(new, {"ids": [document.pk]}).content.decode()

    assert f'data-pages="{rendition.page_count}"' in body
    assert f"<span data-picked-pages>{rendition.page_count}</span>" in body


def test_a_productions_page_counts_each_rendered_documents_stamped_pages(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document, rendition = _rendered(lawyer, case, run_jobs)
    production = production_services.production_create(
        case=case, actor=lawyer, volume="RND001", prefix="RND", document_ids=[document.pk]
    )
    detail = reverse(
        "documents:production_detail",
        kwargs={"case_id": case.pk, "production_id": production.pk},
    )

    body = lawyer_client.get(detail).content.decode()

    assert production.page_count == rendition.page_count
    assert f'<td class="num">{rendition.page_count}</td>' in body


# --- 4. One test of page images, the drafting panel included -------------------------------


def test_has_page_images_follows_the_rendition(lawyer: User, case: Case, run_jobs: Jobs) -> None:
    document, rendition = _rendered(lawyer, case, run_jobs)

    assert viewer_selectors.document_has_page_images(document, 1)
    assert viewer_selectors.document_has_page_images(document, rendition.page_count)
    assert not viewer_selectors.document_has_page_images(document, rendition.page_count + 1)
    Rendition.objects.filter(pk=rendition.pk).update(
        status=Rendition.Status.FAILED, output=None, page_count=0
    )
    assert not viewer_selectors.document_has_page_images(Document.objects.get(pk=document.pk), 1)


def test_the_drafting_panel_shows_a_rendered_documents_page_image(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document, _ = _rendered(lawyer, case, run_jobs)
    packet = packet_of(case=case, user=lawyer, documents=[document])
    draft = draft_of(case=case, user=lawyer, packet=packet)
    _, (finding,) = verified(draft=draft, user=lawyer, statuses=["supported"])
    version = reverse(
        "drafting:version", kwargs={"case_id": case.pk, "draft_id": draft.pk, "number": 1}
    )

    panel = lawyer_client.get(version, {"finding": str(finding.pk), "panel": "1"}).content.decode()

    # The rendition's page 1 (US Letter or A4, in points), served to the member.
    assert re.search(r'<svg class="page-figure__svg" viewBox="0 0 \d+\.\d+ \d+\.\d+"', panel)
    image = f"/api/v1/cases/{case.pk}/documents/{document.pk}/pages/1/image?dpi=100"
    assert f'<image href="{image}"' in panel and "has no page image" not in panel
    assert lawyer_client.get(image).status_code == 200
