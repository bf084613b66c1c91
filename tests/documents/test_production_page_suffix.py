"""Productions with a page suffix: one Bates number a document, its pages "ABC000123.001",
"ABC000123.002", ... (issue 28 req 8), beside productions that number pages, in one case."""

import io
import zipfile
from collections.abc import Callable
from typing import Any

import pymupdf
import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from mcp.client import Client as McpClient

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import selectors, storage
from apps.documents.list_forms import DocumentListQuery
from apps.documents.models import BatesPage, Production, ProductionDocument
from tests.api.test_mcp import _agent, _ok, _refused
from tests.documents.files import real, upload
from tests.harness.sse import served_asgi, token_for

pytestmark = pytest.mark.django_db(databases="__all__")

JSON = "application/json"
LETTER = "ca6_clerk-letter_17-3994.pdf"  # 3 pages
ORDER = "ca10_order_in-re-liebowitz_21-800.pdf"  # 1 page
NOTICE = "ca2_docketing-notice_17-3510.pdf"  # 2 pages


def _ingest(client: Client, case: Case, run_jobs: Callable[[], None], *names: str) -> list[int]:
    files = [upload(name, real(name)) for name in names]
    body = client.post(f"/api/v1/cases/{case.pk}/documents", {"files": files, "origin": "court"})
    assert body.status_code == 201, body.content
    run_jobs()
    return [r["document"]["id"] for r in body.json()["results"]]


def _post(client: Client, case: Case, **payload: object) -> tuple[int, dict]:
    response = client.post(f"/api/v1/cases/{case.pk}/productions", payload, content_type=JSON)
    return response.status_code, response.json()


@pytest.fixture
def suffixed(lawyer_api: Client, case: Case, run_jobs: Callable[[], None]) -> Production:
    """ABC000123 (the 3-page letter, pages .001-.003) and ABC000124 (the 1-page order, .001),
    stamped."""
    letter, order = _ingest(lawyer_api, case, run_jobs, LETTER, ORDER)
    status, body = _post(
        lawyer_api,
        case,
        volume="SFX001",
        prefix="ABC",
        document_ids=[letter, order],
        start_number=123,
        page_suffix_digits=3,
        legend="CONFIDENTIAL",
    )
    assert status == 201, body
    run_jobs()
    return Production.objects.get(pk=body["id"])


def test_each_document_takes_one_number_and_each_page_a_suffix(
    lawyer_api: Client, case: Case, suffixed: Production
) -> None:
    assert (suffixed.status, suffixed.page_suffix_digits) == ("ready", 3)
    assert (suffixed.first_number, suffixed.last_number, suffixed.page_count) == (123, 124, 4)
    index = BatesPage.objects.filter(production=suffixed).order_by("production_page")
    assert [(b.number, b.page_suffix, b.page_number) for b in index] == [
        (123, 1, 1),
        (123, 2, 2),
        (123, 3, 3),
        (124, 1, 1),
    ]
    items = ProductionDocument.objects.filter(production=suffixed).order_by("order")
    assert [(i.first_number, i.last_number, i.page_count) for i in items] == [
        (123, 123, 3),
        (124, 124, 1),
    ]
    detail = lawyer_api.get(f"/api/v1/cases/{case.pk}/productions/{suffixed.pk}").json()
    assert detail["page_suffix_digits"] == 3
    assert [(i["begbates"], i["endbates"]) for i in detail["items"]] == [
        ("ABC000123.001", "ABC000123.003"),
        ("ABC000124.001", "ABC000124.001"),
    ]


def test_the_stamp_carries_the_suffix_and_the_legend_stays_apart(suffixed: Production) -> None:
    assert suffixed.output is not None
    with pymupdf.open(storage.blob_path(suffixed.output.sha256)) as volume:
        labels = ["ABC000123.001", "ABC000123.002", "ABC000123.003", "ABC000124.001"]
        assert volume.page_count == len(labels)
        for page, label in zip(volume, labels, strict=True):
            hits = page.search_for(label)
            assert len(hits) == 1, label
            # Bottom right, whole: the suffix is printed with the number, not cut off.
            assert hits[0].x0 > page.rect.width / 2 and hits[0].x1 <= page.rect.width
            legend = page.search_for("CONFIDENTIAL")
            assert legend and legend[0].x1 < hits[0].x0
            # The legend is never part of the number.
            assert "CONFIDENTIAL" not in label and f"{label} CONFIDENTIAL" not in page.get_text()


def test_a_second_production_numbers_pages_after_the_documents_numbers(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None], suffixed: Production
) -> None:
    (notice,) = _ingest(lawyer_api, case, run_jobs, NOTICE)

    status, body = _post(lawyer_api, case, volume="PLAIN01", prefix="ABC", document_ids=[notice])

    assert status == 201, body
    assert (body["first_bates"], body["last_bates"]) == ("ABC000125", "ABC000126")
    plain = BatesPage.objects.filter(production_id=body["id"]).order_by("number")
    assert [(b.number, b.page_suffix) for b in plain] == [(125, 0), (126, 0)]
    # A start number inside the suffixed production's numbers is refused like any other.
    status, body = _post(
        lawyer_api,
        case,
        volume="CLASH01",
        prefix="ABC",
        document_ids=[notice],
        start_number=124,
        page_suffix_digits=2,
    )
    assert status == 409 and "ABC000124" in body["detail"]


def test_the_index_is_unique_over_prefix_number_and_suffix(suffixed: Production) -> None:
    row = BatesPage.objects.get(production=suffixed, number=124, page_suffix=1)
    row.pk, row.page_suffix, row.production_page = None, 2, 99
    row.save()  # ABC000124.002: another label

    row.pk, row.production_page = None, 100
    with pytest.raises(IntegrityError), transaction.atomic():
        row.save()  # ABC000124.002 again


@pytest.mark.parametrize("value", [7, -1, "3", True, 2.5, None])
def test_the_api_refuses_a_page_suffix_that_is_not_0_to_6_digits(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None], value: object
) -> None:
    (order,) = _ingest(lawyer_api, case, run_jobs, ORDER)

    status, _ = _post(
        lawyer_api,
        case,
        volume="BAD01",
        prefix="ABC",
        document_ids=[order],
        page_suffix_digits=value,
    )

    assert status in (400, 422)
    assert not Production.objects.exists() and not BatesPage.objects.exists()


# The MCP server answers on threads of its own, with connections of their own.
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.slow
def test_the_mcp_tool_takes_a_page_suffix_and_refuses_a_bad_one(
    lawyer: User, lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    (letter,) = _ingest(lawyer_api, case, run_jobs, LETTER)
    secret, _ = token_for(lawyer)
    body = {"volume": "MCP01", "prefix": "ABC", "document_ids": [letter]}

    async def script(client: McpClient) -> tuple[list[str], Any]:
        refused = [
            await _refused(
                client,
                "production_create",
                {"case_id": case.pk, "body": {**body, "page_suffix_digits": bad}},
            )
            for bad in (7, -1, "2")
        ]
        made = await _ok(
            client,
            "production_create",
            {"case_id": case.pk, "body": {**body, "page_suffix_digits": 2}},
        )
        return refused, made

    with served_asgi() as base:
        refused, made = _agent(base, secret, script)

    assert all("page_suffix_digits" in text for text in refused), refused
    assert made["page_suffix_digits"] == 2
    assert [(i["begbates"], i["endbates"]) for i in made["items"]] == [
        ("ABC000001.01", "ABC000001.03")
    ]


def test_a_document_with_more_pages_than_its_suffix_holds_is_refused_by_name(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    (long,) = _ingest(lawyer_api, case, run_jobs, "ca5_st-pierre-v-standard-ins_21-50498.pdf")

    status, body = _post(
        lawyer_api, case, volume="LONG01", prefix="ABC", document_ids=[long], page_suffix_digits=1
    )

    assert status == 400
    assert "10 pages" in body["detail"] and "ca5_st-pierre" in body["detail"]
    assert not Production.objects.exists()


def test_the_form_takes_a_page_suffix_and_refuses_a_bad_one(
    lawyer_client: Client, case: Case, lawyer_api: Client, run_jobs: Callable[[], None]
) -> None:
    (letter,) = _ingest(lawyer_api, case, run_jobs, LETTER)
    url = f"/cases/{case.pk}/productions/new/"
    form = {"volume": "FORM01", "bates_prefix": "ABC", "digits": "6", "position": "bottom_right"}
    form |= {"legend_position": "bottom_left", "font_size": "9", "margin": "18"}
    form |= {"documents": str(letter), "op": "commit"}

    for bad in ("7", "-1", "three"):
        refused = lawyer_client.post(url, {**form, "page_suffix_digits": bad})
        assert refused.status_code == 400, bad
        assert not Production.objects.exists()

    made = lawyer_client.post(url, {**form, "page_suffix_digits": "2"})

    assert made.status_code == 302, made.content[:2000]
    production = Production.objects.get()
    labels = [
        production.bates(b.number, b.page_suffix)
        for b in production.bates_pages.order_by("production_page")
    ]
    assert labels == ["ABC000001.01", "ABC000001.02", "ABC000001.03"]


def test_a_suffixed_number_is_found_by_the_lookup_and_the_search(
    lawyer_api: Client, case: Case, suffixed: Production
) -> None:
    def lookup(reference: str) -> tuple[int, list[tuple[str, int]]]:
        response = lawyer_api.get(f"/api/v1/cases/{case.pk}/bates/{reference}")
        if response.status_code != 200:
            return response.status_code, []
        return 200, [(h["bates"], h["page_number"]) for h in response.json()]

    assert lookup("ABC000123.002") == (200, [("ABC000123.002", 2)])
    # The number alone names its document's every page.
    assert lookup("ABC000123") == (
        200,
        [("ABC000123.001", 1), ("ABC000123.002", 2), ("ABC000123.003", 3)],
    )
    assert lookup("ABC000123.003-ABC000124.001") == (
        200,
        [("ABC000123.003", 3), ("ABC000124.001", 1)],
    )
    assert lookup("ABC 000124.001") == (200, [("ABC000124.001", 1)])
    assert lookup("ABC000123.004")[0] == 404
    assert lookup("ABC000123." + "9" * 30)[0] == 404  # past any suffix: no page, no overflow

    page = BatesPage.objects.get(production=suffixed, number=123, page_suffix=2)
    word = next(w for w in page.document.pages.get(number=2).text.split() if len(w) > 6)
    hits = lawyer_api.get(f"/api/v1/cases/{case.pk}/search", {"q": word}).json()["items"]
    assert "ABC000123.002" in {h["bates"] for h in hits if h["page"] == 2}, hits


def test_the_review_list_shows_each_documents_first_and_last_suffixed_page(
    lawyer: User, case: Case, suffixed: Production
) -> None:
    page = selectors.document_review_page_for_user(
        user=lawyer, case_id=case.pk, query=DocumentListQuery(sort="name")
    )

    ranges = {d.filename: (d.bates_begin, d.bates_end) for d in page.documents}  # type: ignore[attr-defined]
    assert ranges == {
        "SFX001.pdf": (None, None),  # the volume itself: not produced
        LETTER: ("ABC000123.001", "ABC000123.003"),
        ORDER: ("ABC000124.001", "ABC000124.001"),
    }


def test_the_load_files_carry_the_suffixed_numbers(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None], suffixed: Production
) -> None:
    base = f"/api/v1/cases/{case.pk}/productions/{suffixed.pk}/exports"
    export = lawyer_api.post(base, {"encoding": "utf-8", "image_dpi": 100}, content_type=JSON)
    assert export.status_code == 202, export.content
    run_jobs()
    response = lawyer_api.get(f"{base}/{export.json()['id']}/zip")
    assert response.status_code == 200
    # A streamed download (the test client's stub type does not name streaming_content).
    streamed = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    archive = zipfile.ZipFile(io.BytesIO(streamed))

    dat = archive.read("SFX001/SFX001.dat").decode("utf-8-sig").split("\r\n")
    header = [f.strip("\xfe") for f in dat[0].split("\x14")]
    rows = [
        dict(zip(header, (v.strip("\xfe") for v in r.split("\x14")), strict=True))
        for r in dat[1:]
        if r
    ]
    assert [(r["BEGBATES"], r["ENDBATES"], r["PGCOUNT"]) for r in rows] == [
        ("ABC000123.001", "ABC000123.003", "3"),
        ("ABC000124.001", "ABC000124.001", "1"),
    ]
    opt = archive.read("SFX001/SFX001.opt").decode("utf-8-sig").split("\r\n")
    assert [line.split(",")[0] for line in opt if line] == [
        "ABC000123.001",
        "ABC000123.002",
        "ABC000123.003",
        "ABC000124.001",
    ]
    names = set(archive.namelist())
    assert {"SFX001/TEXT/0001/ABC000123.001.txt", "SFX001/IMAGES/0001/ABC000123.003.tif"} <= names
