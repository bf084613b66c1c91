"""The document viewer: one page at a time with navigation and thumbnails, the search's words
boxed on the page image, stamped pages of productions, Bates ranges, withdrawn documents, and
the bounded endpoints behind it (thumbnails, hit boxes)."""

import io
import json
import re
from collections.abc import Callable
from html import unescape

import pymupdf
import pytest
from django.test import Client
from PIL import Image

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import review_services, services, viewer_selectors
from apps.documents.models import Document, Production
from tests.documents.files import scanned_pdf

pytestmark = pytest.mark.django_db(databases="__all__")

Jobs = Callable[[], None]
JSON = "application/json"


def _pdf(pages: list[str]) -> bytes:
    with pymupdf.open() as pdf:
        for text in pages:
            pdf.new_page().insert_text((72, 72), text, fontsize=11)
        return pdf.tobytes()


def _add(user: User, case: Case, name: str, data: bytes) -> Document:
    outcome = services.document_upload(
        case=case, uploaded_by=user, filename=name, source=io.BytesIO(data), origin="client"
    )
    assert outcome.document is not None, outcome.error
    return outcome.document


def _get(client: Client, document: Document, **params: str | int) -> tuple[int, str]:
    response = client.get(f"/cases/{document.case_id}/documents/{document.pk}/", params)
    return response.status_code, response.content.decode()


def _hits(client: Client, document: Document, number: int, q: str) -> tuple[int, dict]:
    url = f"/api/v1/cases/{document.case_id}/documents/{document.pk}/pages/{number}/hits"
    response = client.get(url, {"q": q})
    return response.status_code, response.json()


def _audit_mark() -> int:
    """The newest audit row now (the log is append-only: later rows are this test's reads)."""
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def _hrefs(body: str, key: str) -> list[str]:
    return [unescape(h) for h in re.findall(rf'data-key="{key}" href="([^"]+)"', body)]


# --- One page at a time --------------------------------------------------------------------


def test_viewer_shows_one_page_with_its_neighbours_thumbnails_and_text(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "five.pdf", _pdf([f"This is page {n}." for n in range(1, 6)]))
    run_jobs()
    mark = _audit_mark()

    status, body = _get(lawyer_client, document, page=3)

    assert status == 200
    base = f"/cases/{case.pk}/documents/{document.pk}/"
    assert _hrefs(body, "previous-page") == [f"{base}?page=2#viewer"]
    assert _hrefs(body, "next-page") == [f"{base}?page=4#viewer"]
    assert 'id="page-3"' in body and "This is page 3." in body and "This is page 2." not in body
    thumbs = re.findall(r'data-thumb="(\d+)"', body)
    assert thumbs == ["1", "2", "3", "4", "5"]
    assert re.search(r'aria-current="page" data-thumb="3"', body)
    image = f"/api/v1/cases/{case.pk}/documents/{document.pk}/pages"
    assert f'src="{image}/2/image?thumb=1"' in body and f'src="{image}/3/image?dpi=150"' in body
    assert 'value="3" min="1" max="5"' in body  # the page box
    # Text layer: no OCR ran, so no confidence is shown at all.
    assert "The PDF&#x27;s text layer" in body and "OCR confidence" not in body
    assert "not produced" in body
    # One read recorded for the page, as a view of the document.
    assert list(AuditEvent.objects.filter(pk__gt=mark).values_list("action", "target_id")) == [
        ("document.view", str(document.pk))
    ]


def test_the_page_image_comes_first_and_the_facts_in_a_side_pane_after_it(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "three.pdf", _pdf([f"This is page {n}." for n in range(1, 4)]))
    run_jobs()

    _, body = _get(lawyer_client, document, page=2)

    # In the page's order: the viewer (its controls, then the image), then the side pane with
    # the origin, Bates and hashes.
    workspace = body.index('class="viewer-workspace"')
    controls = body.index('data-key="next-page"')
    image = body.index('id="viewer-image"')
    side = body.index('class="viewer-side"')
    assert workspace < controls < image < side
    assert side < body.index('id="doc-sha256"') and side < body.index('class="viewer-bates"')
    assert side < body.index('class="doc-origin"')
    # Page turns are announced where a screen reader hears them (the section is replaced).
    assert body.index('id="viewer-turned"') < workspace


def test_the_viewer_alone_for_a_page_turn(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "five.pdf", _pdf([f"This is page {n}." for n in range(1, 6)]))
    run_jobs()
    mark = _audit_mark()

    status, part = _get(lawyer_client, document, page=4, part="viewer")

    assert status == 200
    # The viewer section alone: no page around it, no side pane.
    assert part.lstrip().startswith('<section class="section viewer" id="viewer"')
    assert part.rstrip().endswith("</section>")
    assert "<html" not in part and "viewer-side" not in part and "doc-sha256" not in part
    # Page 4 with its links, thumbnails, image and text, as the whole page draws them.
    base = f"/cases/{case.pk}/documents/{document.pk}/"
    assert _hrefs(part, "previous-page") == [f"{base}?page=3#viewer"]
    assert _hrefs(part, "next-page") == [f"{base}?page=5#viewer"]
    assert re.search(r'aria-current="page" data-thumb="4"', part)
    assert f"/documents/{document.pk}/pages/4/image?dpi=150" in part
    assert "This is page 4." in part and "This is page 3." not in part
    # A page read all the same: audited as the whole page is.
    assert list(AuditEvent.objects.filter(pk__gt=mark).values_list("action", "target_id")) == [
        ("document.view", str(document.pk))
    ]
    # Past the last page it is a 404, as the whole page is.
    assert _get(lawyer_client, document, page=6, part="viewer")[0] == 404


def test_first_and_last_pages_have_no_link_past_the_end(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "two.pdf", _pdf(["One.", "Two."]))
    run_jobs()

    _, first = _get(lawyer_client, document)
    _, last = _get(lawyer_client, document, page=2)

    assert _hrefs(first, "previous-page") == [] and _hrefs(first, "next-page")
    assert _hrefs(last, "next-page") == [] and _hrefs(last, "previous-page")


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ("0", 200),  # below 1 is page 1
        ("", 200),
        ("3", 404),
        ("abc", 404),
        ("-1", 404),
        ("1e3", 404),
        ("\u0661", 404),  # an Arabic-Indic one is not a page number here
        ("9" * 40, 404),
        ("2" * 7, 404),
    ],
)
def test_a_page_the_document_does_not_have_is_404(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs, raw: str, status: int
) -> None:
    document = _add(lawyer, case, "two.pdf", _pdf(["One.", "Two."]))
    run_jobs()

    code, body = _get(lawyer_client, document, page=raw)

    assert code == status
    if status == 404:
        assert "two.pdf" not in body


@pytest.mark.slow
def test_thumbnail_strip_is_a_window_around_the_page(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    count = viewer_selectors.THUMBS_AROUND * 2 + 20
    document = _add(lawyer, case, "long.pdf", _pdf([f"Page {n}." for n in range(1, count + 1)]))
    run_jobs()

    _, body = _get(lawyer_client, document, page=count // 2)

    thumbs = [int(n) for n in re.findall(r'data-thumb="(\d+)"', body)]
    around = viewer_selectors.THUMBS_AROUND
    assert thumbs == list(range(count // 2 - around, count // 2 + around + 1))
    assert f"of {count}; type a page number" in body


def test_text_file_shows_its_rendering_without_confidence_or_boxes(
    lawyer: User, lawyer_client: Client, lawyer_api: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "memo.txt", b"Line one about the contract\n")
    run_jobs()

    _, body = _get(lawyer_client, document, q="contract")
    status, hits = _hits(lawyer_api, document, 1, "contract")

    # The image is the rendering to PDF, read through the page-image endpoint.
    assert f"/documents/{document.pk}/pages/1/image?dpi=150" in body
    assert "rendered (1 page)" in body and 'data-zoom="width"' in body
    assert "OCR confidence" not in body and "Line one" in body
    # Word boxes of a rendered kind come from its rendition's text layer.
    assert status == 200 and hits["page"] == 1 and hits["source"] == "rendition"
    assert len(hits["boxes"]) == 1 and hits["truncated"] is False


@pytest.mark.parametrize("name", ["a.eml", "b.txt"])
def test_text_kinds_before_their_rendering_show_no_image(
    lawyer: User, lawyer_client: Client, case: Case, name: str
) -> None:
    data = b"From: a@example.com\r\nSubject: S\r\n\r\nBody.\r\n" if name == "a.eml" else b"x\n"
    document = _add(lawyer, case, name, data)
    services.document_extract_text(document_id=document.pk)  # read, not rendered yet

    status, body = _get(lawyer_client, document)

    assert status == 200 and "<img" not in body and 'data-zoom="width"' not in body


@pytest.mark.slow
def test_ocr_page_shows_its_confidence_and_boxes_its_words(
    lawyer: User, lawyer_client: Client, lawyer_api: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(
        lawyer, case, "scan.pdf", scanned_pdf("ca7_order_in-re-fedex-ground_17-2400.pdf", pages=1)
    )
    run_jobs()
    page = document.pages.get(number=1)
    assert page.source == "ocr" and page.ocr_confidence is not None

    _, body = _get(lawyer_client, document, q="circuit")
    status, hits = _hits(lawyer_api, document, 1, "circuit")

    assert f"{page.ocr_confidence:.1f}%" in body and "OCR confidence" in body
    hits_url = f"/api/v1/cases/{case.pk}/documents/{document.pk}/pages/1/hits?q=circuit"
    assert f'data-hits-url="{hits_url}"' in body
    assert status == 200 and hits["source"] == "ocr" and hits["boxes"]
    texts = [w[0].lower() for w in page.words]
    assert len(hits["boxes"]) == sum("circuit" in t for t in texts)
    for x0, y0, x1, y1 in hits["boxes"]:
        assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1


# --- Hit boxes -----------------------------------------------------------------------------


def test_hit_boxes_come_from_the_text_layer_stemmed_and_without_negated_words(
    lawyer: User, lawyer_api: Client, case: Case, run_jobs: Jobs
) -> None:
    data = _pdf(["The contracts were signed by Acme."])
    document = _add(lawyer, case, "deal.pdf", data)
    run_jobs()
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        [where] = pdf[0].search_for("contracts")
        width, height = pdf[0].rect.width, pdf[0].rect.height

    _, found = _hits(lawyer_api, document, 1, "contract")
    _, both = _hits(lawyer_api, document, 1, '"were signed" or contract -acme')
    _, acme = _hits(lawyer_api, document, 1, "ACME")
    _, stop = _hits(lawyer_api, document, 1, "the")

    assert found["source"] == "text_layer" and not found["truncated"]
    [box] = found["boxes"]
    expected = [where.x0 / width, where.y0 / height, where.x1 / width, where.y1 / height]
    assert box == pytest.approx(expected, abs=0.005)
    # "were" is a stop word (no box, as search ignores it); "acme" is negated.
    assert len(both["boxes"]) == 2 and len(acme["boxes"]) == 1
    assert acme["boxes"][0] not in both["boxes"]
    assert stop["boxes"] == []  # a stop word matches nothing, as in search


@pytest.mark.parametrize(
    "q",
    [
        "-" * 400,
        '"contract',
        "contract\x00signed",
        "<script>alert(1)</script>",
        "' OR 1=1 --",
        "a & b | ! ( :*",
        "\u202e\u0000\ufeff",
    ],
)
def test_hostile_queries_get_an_answer_never_an_error(
    lawyer: User, lawyer_api: Client, case: Case, run_jobs: Jobs, q: str
) -> None:
    document = _add(lawyer, case, "deal.pdf", _pdf(["The contracts were signed."]))
    run_jobs()

    status, body = _hits(lawyer_api, document, 1, q)

    assert status in (200, 400), body
    if status == 200:
        assert all(len(box) == 4 for box in body["boxes"])


def test_hit_boxes_refuse_bad_input(
    lawyer: User, lawyer_api: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "deal.pdf", _pdf(["The contracts were signed."]))
    run_jobs()
    base = f"/api/v1/cases/{case.pk}/documents/{document.pk}/pages"

    assert lawyer_api.get(f"{base}/2/hits", {"q": "contract"}).status_code == 404
    assert lawyer_api.get(f"{base}/0/hits", {"q": "contract"}).status_code in (400, 422)
    assert lawyer_api.get(f"{base}/1/hits").status_code in (400, 422)  # no q
    assert lawyer_api.get(f"{base}/1/hits", {"q": "   "}).status_code == 400
    assert lawyer_api.get(f"{base}/1/hits", {"q": "x" * 501}).status_code in (400, 422)


def test_hit_boxes_are_capped(lawyer: User, lawyer_api: Client, case: Case, run_jobs: Jobs) -> None:
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        for row in range(60):
            page.insert_text((20, 20 + row * 12), "claim " * 12, fontsize=6)
        data = pdf.tobytes()
    document = _add(lawyer, case, "many.pdf", data)
    run_jobs()

    status, body = _hits(lawyer_api, document, 1, "claim")

    assert status == 200 and body["truncated"]
    assert len(body["boxes"]) == viewer_selectors.MAX_BOXES
    assert len(json.dumps(body)) < 40_000


def test_hit_boxes_of_another_cases_page_are_404_and_not_audited(
    lawyer: User, outsider_api: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "deal.pdf", _pdf(["The contracts were signed."]))
    run_jobs()
    mark = _audit_mark()

    status, body = _hits(outsider_api, document, 1, "contract")

    assert status == 404 and "contract" not in json.dumps(body)
    assert not AuditEvent.objects.filter(pk__gt=mark).exists()


def test_hit_boxes_read_is_audited_with_the_page(
    lawyer: User, lawyer_api: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "deal.pdf", _pdf(["The contracts were signed."]))
    run_jobs()
    mark = _audit_mark()

    _hits(lawyer_api, document, 1, "contract")

    event = AuditEvent.objects.get(pk__gt=mark)
    assert (event.action, event.case_id, event.target_id) == (
        "document.page",
        case.pk,
        str(document.pk),
    )
    assert event.detail["page"] == 1


# --- Thumbnails ----------------------------------------------------------------------------


def test_thumbnail_is_small_and_the_dpi_stays_bounded(
    lawyer: User, lawyer_api: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "deal.pdf", _pdf(["The contracts were signed."]))
    run_jobs()
    url = f"/api/v1/cases/{case.pk}/documents/{document.pk}/pages/1/image"

    big: dict[str, str | int] = {"thumb": "1", "dpi": 300}
    thumb = lawyer_api.get(url, big)
    page = lawyer_api.get(url, {"dpi": 150})

    assert thumb.status_code == 200 and thumb["Content-Type"] == "image/png"
    with Image.open(io.BytesIO(thumb.content)) as image:
        assert image.width <= 160  # 612 points at 18 dpi: 153 pixels
    with Image.open(io.BytesIO(page.content)) as image:
        assert image.width > 1000
    bad_params: list[dict[str, str | int]] = [
        {"dpi": 301},
        {"dpi": 35},
        {"dpi": 10**12},
        {"dpi": "x"},
        {"thumb": "maybe"},
    ]
    for bad in bad_params:
        assert lawyer_api.get(url, bad).status_code in (400, 422), bad


# --- Previous and next document ------------------------------------------------------------


def test_previous_and_next_document_follow_the_search_then_the_case_order(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    first = _add(lawyer, case, "a.pdf", _pdf(["An indemnity clause."]))
    middle = _add(lawyer, case, "b.pdf", _pdf(["Nothing to see."]))
    last = _add(lawyer, case, "c.pdf", _pdf(["Filler.", "Indemnity again, on page two."]))
    run_jobs()
    base = "/cases/{}/documents/{}/"

    _, in_case = _get(lawyer_client, middle)
    _, in_search = _get(lawyer_client, last, q="indemnity")

    # The case's order is the list's: newest first.
    assert _hrefs(in_case, "previous-document") == [
        f"{base.format(case.pk, last.pk)}?page=1#viewer"
    ]
    assert _hrefs(in_case, "next-document") == [f"{base.format(case.pk, first.pk)}?page=1#viewer"]
    assert "in the case's order" in in_case
    # The search's hits skip b.pdf and open each document at its hit.
    links = _hrefs(in_search, "previous-document") + _hrefs(in_search, "next-document")
    assert links == [f"{base.format(case.pk, first.pk)}?page=hit&q=indemnity#viewer"]
    assert "in the results for “indemnity”" in in_search
    _, from_first = _get(lawyer_client, first, q="indemnity")
    neighbours = _hrefs(from_first, "previous-document") + _hrefs(from_first, "next-document")
    assert neighbours == [f"{base.format(case.pk, last.pk)}?page=2&q=indemnity#viewer"]


def test_search_results_link_to_the_page_with_the_query(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "c.pdf", _pdf(["Filler.", "Indemnity on page two."]))
    run_jobs()

    body = lawyer_client.get(f"/cases/{case.pk}/search/", {"q": "indemnity"}).content.decode()

    url = f"/cases/{case.pk}/documents/{document.pk}/?page=2&amp;q=indemnity#viewer"
    assert f'href="{url}"' in body


def test_hostile_query_on_the_viewer_is_escaped_and_bounded(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "a.pdf", _pdf(["Text."]))
    run_jobs()

    status, body = _get(lawyer_client, document, q='"><script>alert(1)</script>' + "x" * 5000)

    assert status == 200
    assert "<script>alert(1)" not in body
    assert "x" * 501 not in body


# --- Productions: Bates ranges, stamped pages, Bates lookup --------------------------------


def _produced(lawyer_api: Client, case: Case, run_jobs: Jobs, *documents: Document) -> Production:
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "ACME001", "prefix": "ACME", "document_ids": [d.pk for d in documents]},
        content_type=JSON,
    )
    assert response.status_code == 201, response.content
    run_jobs()
    production = Production.objects.get(pk=response.json()["id"])
    assert production.status == "ready" and production.volume_document_id
    return production


def test_produced_page_has_a_stamped_version_and_the_document_its_range(
    lawyer: User, lawyer_client: Client, lawyer_api: Client, case: Case, run_jobs: Jobs
) -> None:
    before = _add(lawyer, case, "before.pdf", _pdf(["Before."]))
    document = _add(lawyer, case, "deal.pdf", _pdf(["Page one.", "Page two."]))
    run_jobs()
    production = _produced(lawyer_api, case, run_jobs, before, document)
    volume = production.volume_document_id

    _, original = _get(lawyer_client, document, page=2)
    _, stamped = _get(lawyer_client, document, page=2, stamped=production.pk)
    _, forged = _get(lawyer_client, document, page=2, stamped="999999")

    assert "ACME000002\u2013ACME000003" in original and "ACME001" in original
    base = f"/cases/{case.pk}/documents/{document.pk}/"
    assert _hrefs(original, "stamped") == [f"{base}?page=2&stamped={production.pk}#viewer"]
    assert f"/documents/{document.pk}/pages/2/image?dpi=150" in original
    # The stamped page is page 3 of the volume, read through the same image endpoint.
    assert f"/api/v1/cases/{case.pk}/documents/{volume}/pages/3/image?dpi=150" in stamped
    assert "stamped ACME000003" in stamped
    assert _hrefs(stamped, "previous-page") == [f"{base}?page=1&stamped={production.pk}#viewer"]
    # A production the page is not in shows the original.
    assert f"/documents/{document.pk}/pages/2/image?dpi=150" in forged
    image = lawyer_client.get(f"/api/v1/cases/{case.pk}/documents/{volume}/pages/3/image")
    assert image.status_code == 200 and image["Content-Type"] == "image/png"


def test_bates_lookup_shows_the_stamped_page(
    lawyer: User, lawyer_client: Client, lawyer_api: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "deal.pdf", _pdf(["Page one.", "Page two."]))
    run_jobs()
    production = _produced(lawyer_api, case, run_jobs, document)
    volume = production.volume_document_id

    body = lawyer_client.get(f"/cases/{case.pk}/bates/", {"ref": "ACME000002"}).content.decode()
    api = lawyer_api.get(f"/api/v1/cases/{case.pk}/bates/ACME000002").json()

    assert f"/api/v1/cases/{case.pk}/documents/{volume}/pages/2/image?dpi=100" in body
    assert f"?page=2&amp;stamped={production.pk}#viewer" in body
    [hit] = api
    assert hit["stamped_image_url"] == f"/api/v1/cases/{case.pk}/documents/{volume}/pages/2/image"
    assert hit["image_url"] == f"/api/v1/cases/{case.pk}/documents/{document.pk}/pages/2/image"


# --- Withdrawn -----------------------------------------------------------------------------


def test_withdrawn_document_shows_a_banner_with_the_reason(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "wrong.pdf", _pdf(["Wrong upload."]))
    run_jobs()
    review_services.documents_withdraw(
        actor=lawyer, case=case, document_ids=[document.pk], reason="Wrong client <b>file</b>"
    )

    status, body = _get(lawyer_client, document)

    assert status == 200
    assert "viewer-withdrawn" in body and "Withdrawn" in body
    assert "Wrong client &lt;b&gt;file&lt;/b&gt;" in body
    assert f'action="/cases/{case.pk}/documents/{document.pk}/restore/"' in body
    _, other = _get(lawyer_client, _add(lawyer, case, "fine.pdf", _pdf(["Fine."])))
    assert "viewer-withdrawn" not in other


@pytest.mark.slow
def test_previous_and_next_document_follow_the_list_the_user_came_from(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    b = _add(lawyer, case, "b.pdf", _pdf(["B."]))
    a = _add(lawyer, case, "a.pdf", _pdf(["A."]))
    c = _add(lawyer, case, "c.pdf", _pdf(["C."]))
    _add(lawyer, case, "note.txt", b"A note.\n")
    run_jobs()
    url = "/cases/{}/documents/{}/?page=1&list={}#viewer"

    _, by_name = _get(lawyer_client, b, list="sort=name&after=bogus")
    _, pdfs = _get(lawyer_client, c, list="kind=pdf&sort=-name")
    _, by_case = _get(lawyer_client, b)

    assert _hrefs(by_name, "previous-document") == [url.format(case.pk, a.pk, "sort%3Dname")]
    assert _hrefs(by_name, "next-document") == [url.format(case.pk, c.pk, "sort%3Dname")]
    assert "in the list's filters and order" in by_name
    # The page box keeps the list, so the keys keep following it.
    assert '<input type="hidden" name="list" value="sort=name">' in by_name
    listed = "kind%3Dpdf%26sort%3D-name"
    assert _hrefs(pdfs, "previous-document") == []  # c.pdf is first, Z to A
    assert _hrefs(pdfs, "next-document") == [url.format(case.pk, b.pk, listed)]
    # Without a list: the case's order, newest first (note.txt, c, a, b).
    assert _hrefs(by_case, "previous-document") == [
        f"/cases/{case.pk}/documents/{a.pk}/?page=1#viewer"
    ]


@pytest.mark.parametrize(
    "listed",
    ["sort=bogus", "kind=nothing", "\x00\x00", "tag=99999999999999999999", "x" * 3000, "%%%"],
)
def test_a_bad_list_context_falls_back_to_the_case_order(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs, listed: str
) -> None:
    older = _add(lawyer, case, "older.pdf", _pdf(["Older."]))
    newer = _add(lawyer, case, "newer.pdf", _pdf(["Newer."]))
    run_jobs()

    status, body = _get(lawyer_client, newer, list=listed)

    assert status == 200
    assert _hrefs(body, "next-document") == [
        f"/cases/{case.pk}/documents/{older.pk}/?page=1#viewer"
    ]
    assert "in the case's order" in body


def test_the_list_opens_the_viewer_with_its_filters(
    lawyer: User, lawyer_client: Client, case: Case, run_jobs: Jobs
) -> None:
    document = _add(lawyer, case, "a.pdf", _pdf(["A."]))
    run_jobs()

    filtered = lawyer_client.get(f"/cases/{case.pk}/documents/", {"sort": "name", "kind": "pdf"})
    plain = lawyer_client.get(f"/cases/{case.pk}/documents/")

    viewer = f"/cases/{case.pk}/documents/{document.pk}/"
    assert f'href="{viewer}?list=kind%3Dpdf%26sort%3Dname"' in filtered.content.decode()
    assert f'href="{viewer}" data-field="filename"' in plain.content.decode()
