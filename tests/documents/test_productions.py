"""Productions: merge, Bates-stamp, index every number to exactly one page, look numbers up."""

import hashlib
from collections.abc import Callable

import pymupdf
import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import storage
from apps.documents.models import (
    BatesPage,
    Document,
    Production,
    ProductionDocument,
    Rendition,
)
from tests.documents.files import real, upload

pytestmark = pytest.mark.django_db(databases="__all__")

JSON = "application/json"


def _ingest(client: Client, case: Case, run_jobs: Callable[[], None], *names: str) -> list[int]:
    files = [upload(name, real(name)) for name in names]
    body = client.post(f"/api/v1/cases/{case.pk}/documents", {"files": files, "origin": "court"})
    assert body.status_code == 201, body.content
    run_jobs()
    return [r["document"]["id"] for r in body.json()["results"]]


def _produce(client: Client, case: Case, **payload: object) -> dict:
    response = client.post(f"/api/v1/cases/{case.pk}/productions", payload, content_type=JSON)
    assert response.status_code == 201, response.content
    return response.json()


def _volume(production: Production) -> pymupdf.Document:
    assert production.output is not None
    return pymupdf.open(storage.blob_path(production.output.sha256))


def test_production_merges_in_order_and_stamps_every_page_with_a_searchable_number(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    ids = _ingest(
        lawyer_api,
        case,
        run_jobs,
        "ca2_docketing-notice_17-3510.pdf",
        "ca10_order_in-re-liebowitz_21-800.pdf",
    )
    originals = {d.pk: d.blob.sha256 for d in Document.objects.all()}

    body = _produce(
        lawyer_api,
        case,
        volume="ACME001",
        prefix="ACME",
        document_ids=ids[::-1],
        legend="CONFIDENTIAL - SUBJECT TO PROTECTIVE ORDER",
    )
    run_jobs()

    production = Production.objects.get(pk=body["id"])
    assert (production.status, production.pages_done, production.page_count) == ("ready", 3, 3)
    assert (body["first_bates"], body["last_bates"]) == ("ACME000001", "ACME000003")
    with _volume(production) as volume:
        assert volume.page_count == 3
        for index, page in enumerate(volume):
            label = f"ACME{index + 1:06d}"
            hits = page.search_for(label)
            assert len(hits) == 1, label
            # Bottom right by default; the legend bottom left.
            assert hits[0].x0 > page.rect.width / 2 and hits[0].y0 > page.rect.height * 0.9
            legend = page.search_for("CONFIDENTIAL - SUBJECT TO PROTECTIVE ORDER")
            assert legend and legend[0].x1 < page.rect.width / 2
        # Order as asked: the one-page order first, then the two-page notice.
        assert "Liebowitz" in volume[0].get_text()
        assert "Second Circuit" in volume[1].get_text()
    items = list(ProductionDocument.objects.filter(production=production).order_by("order"))
    assert [(i.document_id, i.first_number, i.last_number) for i in items] == [
        (ids[1], 1, 1),
        (ids[0], 2, 3),
    ]
    index = list(BatesPage.objects.filter(production=production).order_by("number"))
    assert [(b.number, b.document_id, b.page_number, b.production_page) for b in index] == [
        (1, ids[1], 1, 1),
        (2, ids[0], 1, 2),
        (3, ids[0], 2, 3),
    ]
    # Originals untouched.
    for document in Document.objects.filter(pk__in=originals):
        path = storage.blob_path(document.blob.sha256)
        assert hashlib.sha256(path.read_bytes()).hexdigest() == originals[document.pk]


def test_numbering_continues_across_productions_and_never_reuses_a_number(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    first, second = _ingest(
        lawyer_api,
        case,
        run_jobs,
        "ca2_docketing-notice_17-3510.pdf",
        "ca7_order_in-re-fedex-ground_17-2400.pdf",
    )
    _produce(lawyer_api, case, volume="VOL001", prefix="ACME", document_ids=[first])

    later = _produce(lawyer_api, case, volume="VOL002", prefix="ACME", document_ids=[second])
    clash = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "VOL003", "prefix": "ACME", "document_ids": [second], "start_number": 2},
        content_type=JSON,
    )

    assert later["first_bates"] == "ACME000003"
    assert clash.status_code == 409 and "ACME000002 is already used" in clash.json()["detail"]
    assert Production.objects.count() == 2
    with pytest.raises(IntegrityError), transaction.atomic():
        row = BatesPage.objects.first()
        assert row is not None
        BatesPage.objects.create(
            case=case,
            prefix="ACME",
            number=row.number,
            production=row.production,
            document=row.document,
            page_number=1,
            production_page=99,
        )


def test_stamps_never_cover_existing_text_the_page_is_shrunk_instead(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    with pymupdf.open() as crowded:
        page = crowded.new_page()
        page.insert_text((72, 100), "Top of the page")
        page.insert_text((430, page.rect.height - 20), "FOOTER TEXT HERE", fontsize=11)
        data = crowded.tobytes()
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {"files": [upload("crowded.pdf", data)], "origin": "client"},
    )
    run_jobs()
    document_id = response.json()["results"][0]["document"]["id"]

    body = _produce(lawyer_api, case, volume="V1", prefix="X", document_ids=[document_id])
    run_jobs()

    with _volume(Production.objects.get(pk=body["id"])) as volume:
        page = volume[0]
        stamp = page.search_for("X000001")[0]
        footer = page.search_for("FOOTER TEXT HERE")[0]
        assert not stamp.intersects(footer)
        assert footer.y1 < stamp.y0  # the content moved up, out of the stamp's margin
        assert page.search_for("Top of the page")  # the text layer survived the shrink


def test_bates_lookup_returns_the_pages_of_a_number_or_range(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    ids = _ingest(lawyer_api, case, run_jobs, "azd_order_bard-ivc-mdl_15-02641.pdf")
    _produce(lawyer_api, case, volume="ACME001", prefix="ACME", document_ids=ids, start_number=12)

    one = lawyer_api.get(f"/api/v1/cases/{case.pk}/bates/ACME000014")
    many = lawyer_api.get(f"/api/v1/cases/{case.pk}/bates/ACME000014-ACME000016")
    short = lawyer_api.get(f"/api/v1/cases/{case.pk}/bates/acme000014-16")

    assert one.status_code == 200
    assert [(h["bates"], h["page_number"]) for h in one.json()] == [("ACME000014", 3)]
    assert [h["bates"] for h in many.json()] == ["ACME000014", "ACME000015", "ACME000016"]
    assert short.json() == many.json()
    assert "Bard" in many.json()[0]["text"]
    image = lawyer_api.get(many.json()[0]["image_url"])
    assert image.status_code == 200 and image["Content-Type"] == "image/png"


@pytest.mark.parametrize(
    ("reference", "status"),
    [
        ("ACME999999", 404),
        ("NOPE000001", 400),
        ("ACME000016-ACME000014", 400),
        ("ACME000001-ACME009999", 400),
        ("x" * 300, 400),
    ],
)
def test_bad_bates_references_get_clear_errors(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None], reference: str, status: int
) -> None:
    ids = _ingest(lawyer_api, case, run_jobs, "ca10_order_in-re-liebowitz_21-800.pdf")
    _produce(lawyer_api, case, volume="ACME001", prefix="ACME", document_ids=ids)

    response = lawyer_api.get(f"/api/v1/cases/{case.pk}/bates/{reference}")

    assert response.status_code == status
    assert response.json()["detail"]


def test_outsider_cannot_look_up_or_download(
    lawyer_api: Client, outsider_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    ids = _ingest(lawyer_api, case, run_jobs, "ca10_order_in-re-liebowitz_21-800.pdf")
    body = _produce(lawyer_api, case, volume="ACME001", prefix="ACME", document_ids=ids)
    run_jobs()

    for path in (
        f"/api/v1/cases/{case.pk}/bates/ACME000001",
        f"/api/v1/cases/{case.pk}/productions/{body['id']}",
        f"/api/v1/cases/{case.pk}/productions/{body['id']}/pdf",
    ):
        assert outsider_api.get(path).status_code == 404
    assert (
        lawyer_api.get(f"/api/v1/cases/{case.pk}/productions/{body['id']}/pdf").status_code == 200
    )


def test_productions_refuse_bad_requests_and_store_nothing(
    lawyer: User, lawyer_api: Client, case: Case, other_case: Case, run_jobs: Callable[[], None]
) -> None:
    ids = _ingest(lawyer_api, case, run_jobs, "ca10_order_in-re-liebowitz_21-800.pdf")
    text = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {"files": [upload("note.txt", b"plain words")], "origin": "client"},
    ).json()["results"][0]["document"]["id"]
    run_jobs()
    # A text file is produced through its rendering to PDF: one whose rendering failed is not.
    Rendition.objects.filter(document_id=text).update(
        status=Rendition.Status.FAILED, error="damaged", output=None, page_count=0
    )
    base = {"volume": "V1", "prefix": "ACME", "document_ids": ids}
    bad = [
        {**base, "prefix": "acme lower"},
        {**base, "prefix": ""},
        {**base, "volume": "../etc"},
        {**base, "document_ids": []},
        {**base, "document_ids": ids + ids},
        {**base, "document_ids": [text]},
        {**base, "document_ids": [987654]},
        {**base, "digits": 2},
        {**base, "legend": "line one\nline two"},
        {**base, "legend": "CONFIDENTIAL", "legend_position": "bottom_right"},
        {**base, "position": "middle"},
        {**base, "unknown": 1},
    ]
    for payload in bad:
        response = lawyer_api.post(
            f"/api/v1/cases/{case.pk}/productions", payload, content_type=JSON
        )
        assert response.status_code in (400, 422), (payload, response.content)
        assert response.json()["detail"]
    assert not Production.objects.exists() and not BatesPage.objects.exists()


def test_search_hits_name_the_bates_number_of_their_page(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    ids = _ingest(lawyer_api, case, run_jobs, "ca2_docketing-notice_17-3510.pdf")
    before = lawyer_api.get(f"/api/v1/cases/{case.pk}/search", {"q": "PACER"}).json()
    _produce(lawyer_api, case, volume="ACME001", prefix="ACME", document_ids=ids, start_number=41)

    after = lawyer_api.get(f"/api/v1/cases/{case.pk}/search", {"q": "PACER"}).json()

    assert {hit["bates"] for hit in before["items"]} == {None}
    assert {(hit["page"], hit["bates"]) for hit in after["items"]} <= {
        (1, "ACME000041"),
        (2, "ACME000042"),
    }
    assert after["items"] and after["capped"] is False


def test_scanned_text_in_the_margin_is_not_covered_either(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    with pymupdf.open() as crowded:
        page = crowded.new_page()
        page.insert_text((72, 100), "Top of the page", fontsize=14)
        page.insert_text((380, page.rect.height - 22), "SCANNED FOOTER WORDS", fontsize=14)
        pixmap = page.get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
        with pymupdf.open() as scan:
            target = scan.new_page(width=page.rect.width, height=page.rect.height)
            target.insert_image(target.rect, stream=pixmap.tobytes("png"))
            data = scan.tobytes()
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {"files": [upload("scan.pdf", data)], "origin": "client"},
    )
    run_jobs()
    document_id = response.json()["results"][0]["document"]["id"]

    body = _produce(lawyer_api, case, volume="V1", prefix="X", document_ids=[document_id])
    run_jobs()

    with _volume(Production.objects.get(pk=body["id"])) as volume:
        stamped = volume[0]
        stamp = stamped.search_for("X000001")[0]
        image = stamped.get_image_info()[0]["bbox"]
        assert image[3] < stamp.y0  # the scan was shrunk above the stamp's band


def test_bates_lookup_page_shows_image_and_text_and_clear_errors(
    lawyer_api: Client, lawyer: User, case: Case, run_jobs: Callable[[], None]
) -> None:
    from tests.conftest import session_client

    ids = _ingest(lawyer_api, case, run_jobs, "azd_order_bard-ivc-mdl_15-02641.pdf")
    _produce(lawyer_api, case, volume="ACME001", prefix="ACME", document_ids=ids)
    browser = session_client(lawyer)

    found = browser.get(f"/cases/{case.pk}/bates/", {"ref": "ACME000002-ACME000003"})
    missing = browser.get(f"/cases/{case.pk}/bates/", {"ref": "ACME000099"})
    garbage = browser.get(f"/cases/{case.pk}/bates/", {"ref": "<script>x</script>"})

    page = found.content.decode()
    assert found.status_code == 200
    assert "ACME000002" in page and "ACME000003" in page and "Bard IVC" in page
    assert f"/api/v1/cases/{case.pk}/documents/{ids[0]}/pages/2/image" in page
    assert missing.status_code == 404 and "No page carries ACME000099" in missing.content.decode()
    assert garbage.status_code == 400 and "<script>x" not in garbage.content.decode()


def test_viewer_and_pages_api_show_each_pages_bates_number(
    lawyer_api: Client, lawyer: User, case: Case, run_jobs: Callable[[], None]
) -> None:
    from tests.conftest import session_client

    ids = _ingest(lawyer_api, case, run_jobs, "ca2_docketing-notice_17-3510.pdf")
    pages_before = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents/{ids[0]}/pages").json()
    _produce(lawyer_api, case, volume="ACME001", prefix="ACME", document_ids=ids, start_number=7)

    pages = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents/{ids[0]}/pages").json()
    viewer = session_client(lawyer).get(f"/cases/{case.pk}/documents/{ids[0]}/")

    assert [p["bates"] for p in pages_before["items"]] == [None, None]
    assert [p["bates"] for p in pages["items"]] == ["ACME000007", "ACME000008"]
    assert "ACME000007" in viewer.content.decode() and "ACME000008" in viewer.content.decode()
