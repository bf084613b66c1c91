"""Requirement 4: full-text search over a case's pages through the API, with documents ingested
by the real worker: ranking, safe highlighted snippets, web-search syntax, filters, isolation
between cases, and bad queries."""

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.test import Client

from apps.cases.models import Case
from apps.documents.models import Document
from tests.documents.files import upload

pytestmark = pytest.mark.django_db(databases="__all__")

FILLER = "The parties exchanged letters about the schedule and the court noted the filing."


def pdf_of(*pages: str) -> bytes:
    with pymupdf.open() as document:
        for text in pages:
            page = document.new_page()
            page.insert_textbox(pymupdf.Rect(72, 72, 540, 720), text, fontsize=10)
        return document.tobytes()


def search(client: Client, case: Case, q: str, **filters: str | int) -> Any:
    return client.get(f"/api/v1/cases/{case.pk}/search", {"q": q, **filters})


def hits(client: Client, case: Case, q: str, **filters: str | int) -> list[dict[str, Any]]:
    response = search(client, case, q, **filters)
    assert response.status_code == 200, response.content
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def found(client: Client, case: Case, q: str, **filters: str | int) -> list[tuple[str, int]]:
    return [(h["filename"], h["page"]) for h in hits(client, case, q, **filters)]


@pytest.fixture
def ingest(
    post_files: Callable[..., Any], run_jobs: Callable[[], None], blob_root: Path
) -> Callable[..., dict[str, Document]]:
    """`ingest(client, case, {name: bytes}, origin=...)`: upload, run the worker, return the
    documents by file name."""

    def run(
        client: Client, case: Case, files: dict[str, bytes], origin: str = "client"
    ) -> dict[str, Document]:
        response = post_files(
            client, case, *(upload(n, d) for n, d in files.items()), origin=origin
        )
        assert response.json()["created"] == len(files), response.content
        run_jobs()
        documents = {d.filename: d for d in Document.objects.filter(filename__in=files)}
        assert {d.status for d in documents.values()} == {"ready"}
        return documents

    return run


def test_page_that_mentions_a_term_often_ranks_above_one_that_mentions_it_once(
    lawyer_api: Client, case: Case, ingest: Callable[..., dict[str, Document]]
) -> None:
    many = " ".join(["Equitable estoppel bars the claim; estoppel was pleaded."] * 4)
    docs = ingest(
        lawyer_api,
        case,
        {
            "once.pdf": pdf_of(f"{FILLER} Estoppel is mentioned once here.", FILLER),
            "many.pdf": pdf_of(FILLER, f"{FILLER} {many}", FILLER),
            "none.txt": FILLER.encode(),
        },
    )

    results = hits(lawyer_api, case, "estoppel")

    assert [(h["filename"], h["page"]) for h in results] == [("many.pdf", 2), ("once.pdf", 1)]
    assert results[0]["rank"] > results[1]["rank"] > 0
    assert [h["document_id"] for h in results] == [docs["many.pdf"].pk, docs["once.pdf"].pk]
    assert all(h["bates"] is None for h in results)  # no production yet
    assert {h["origin"] for h in results} == {"client"}


def test_snippets_highlight_the_hits_including_stemmed_forms(
    lawyer_api: Client, case: Case, ingest: Callable[..., dict[str, Document]]
) -> None:
    ingest(
        lawyer_api,
        case,
        {"sanctions.txt": b"The district court sanctioned counsel. Sanctions were affirmed."},
    )

    (hit,) = hits(lawyer_api, case, "sanction")

    assert "<mark>sanctioned</mark>" in hit["snippet"]
    assert "<mark>Sanctions</mark>" in hit["snippet"]


def test_html_in_page_text_is_escaped_in_snippets(
    lawyer_api: Client, case: Case, ingest: Callable[..., dict[str, Document]]
) -> None:
    hostile = (
        "<script>alert('x')</script> The <b>estoppel</b> claim fails if 2 < 3 & "
        '<img src=x onerror="alert(1)"> x<y "quoted" estoppel.'
    )
    ingest(lawyer_api, case, {"hostile.txt": hostile.encode()})

    (hit,) = hits(lawyer_api, case, "estoppel")
    snippet = hit["snippet"]

    assert "<mark>estoppel</mark>" in snippet
    assert "&lt;" in snippet and "&amp;" in snippet
    # The only markup left is ours: tags are dropped or escaped, never passed through.
    assert re.sub(r"</?mark>", "", snippet).count("<") == 0
    assert "<script" not in snippet and "<img" not in snippet and "<b>" not in snippet


def test_marker_characters_in_page_text_cannot_forge_highlights(
    lawyer_api: Client, case: Case, ingest: Callable[..., dict[str, Document]]
) -> None:
    """Private-use characters (common in PDFs with broken fonts) are what the selector uses to
    mark hits; the page's own ones must not turn into <mark> tags."""
    ingest(
        lawyer_api, case, {"glyphs.txt": "Broken \ue000glyphs\ue001 near the estoppel.".encode()}
    )

    (hit,) = hits(lawyer_api, case, "estoppel")

    assert hit["snippet"].count("<mark>") == hit["snippet"].count("</mark>") == 1
    assert "<mark>estoppel</mark>" in hit["snippet"]


def test_web_search_syntax_phrases_exclusions_and_or(
    lawyer_api: Client, case: Case, ingest: Callable[..., dict[str, Document]]
) -> None:
    ingest(
        lawyer_api,
        case,
        {
            "phrase.txt": b"The doctrine of promissory estoppel applies to the offer.",
            "apart.txt": b"Estoppel, the court said, is not promissory in this sense.",
            "waiver.txt": b"Estoppel and waiver were both argued below.",
            "laches.txt": b"Laches bars the stale claim.",
        },
    )

    assert found(lawyer_api, case, '"promissory estoppel"') == [("phrase.txt", 1)]
    assert sorted(found(lawyer_api, case, "promissory estoppel")) == [
        ("apart.txt", 1),
        ("phrase.txt", 1),
    ]
    assert sorted(found(lawyer_api, case, "estoppel -waiver")) == [
        ("apart.txt", 1),
        ("phrase.txt", 1),
    ]
    assert sorted(found(lawyer_api, case, "laches or waiver")) == [
        ("laches.txt", 1),
        ("waiver.txt", 1),
    ]


@pytest.mark.slow
def test_filters_by_origin_and_by_document(
    lawyer_api: Client, case: Case, ingest: Callable[..., dict[str, Document]]
) -> None:
    ours = ingest(lawyer_api, case, {"client-memo.txt": b"Indemnity clause review."})
    theirs = ingest(
        lawyer_api,
        case,
        {
            "court-order.pdf": pdf_of(FILLER, "The indemnity clause is enforceable."),
            "court-minutes.txt": b"Minutes: indemnity argued.",
        },
        origin="court",
    )

    assert sorted(found(lawyer_api, case, "indemnity")) == [
        ("client-memo.txt", 1),
        ("court-minutes.txt", 1),
        ("court-order.pdf", 2),
    ]
    assert found(lawyer_api, case, "indemnity", origin="client") == [("client-memo.txt", 1)]
    assert sorted(found(lawyer_api, case, "indemnity", origin="court")) == [
        ("court-minutes.txt", 1),
        ("court-order.pdf", 2),
    ]
    assert found(lawyer_api, case, "indemnity", origin="opposing") == []
    order = theirs["court-order.pdf"]
    assert found(lawyer_api, case, "indemnity", document=order.pk) == [("court-order.pdf", 2)]
    memo = ours["client-memo.txt"]
    assert found(lawyer_api, case, "indemnity", document=memo.pk, origin="court") == []
    assert search(lawyer_api, case, "indemnity", origin="gossip").status_code == 422


def test_only_the_members_case_is_searched(
    lawyer_api: Client,
    staff_api: Client,
    outsider_api: Client,
    case: Case,
    other_case: Case,
    ingest: Callable[..., dict[str, Document]],
) -> None:
    mine = ingest(lawyer_api, case, {"ours.txt": b"The subrogation claim is ours."})
    theirs = ingest(outsider_api, other_case, {"theirs.txt": b"Their subrogation claim."})

    assert found(lawyer_api, case, "subrogation") == [("ours.txt", 1)]
    assert found(staff_api, case, "subrogation") == [("ours.txt", 1)]
    assert found(outsider_api, other_case, "subrogation") == [("theirs.txt", 1)]
    # A document id from another case finds nothing, not that case's page.
    other_id = theirs["theirs.txt"].pk
    assert found(lawyer_api, case, "subrogation", document=other_id) == []
    assert mine["ours.txt"].case_id == case.pk

    refused = search(outsider_api, case, "subrogation")
    assert refused.status_code == 404
    assert set(refused.json()) == {"detail", "code"} and refused.json()["code"] == "not_found"
    assert search(lawyer_api, other_case, "subrogation").status_code == 404


@pytest.mark.parametrize(
    ("q", "detail"),
    [
        ("", "Type something to search for."),
        ("   \t  ", "Type something to search for."),
        ("estoppel " * 60, "A search is at most 500 characters."),
    ],
    ids=["empty", "blank", "too-long"],
)
def test_bad_queries_are_400_with_the_error_shape(
    lawyer_api: Client, case: Case, q: str, detail: str
) -> None:
    response = search(lawyer_api, case, q)

    assert response.status_code == 400
    assert response.json() == {"detail": detail, "code": "invalid"}


def test_missing_query_is_422(lawyer_api: Client, case: Case) -> None:
    response = lawyer_api.get(f"/api/v1/cases/{case.pk}/search")

    assert response.status_code == 422
    assert ["query", "q"] in [e["loc"] for e in response.json()["errors"]]


@pytest.mark.parametrize(
    "q",
    ['"unbalanced', "-", "!!(:*&|", "the and of", "a:* & b", "' OR 1=1 --", "\u0000x"],
)
def test_odd_queries_never_break_search(
    lawyer_api: Client, case: Case, ingest: Callable[..., dict[str, Document]], q: str
) -> None:
    ingest(lawyer_api, case, {"a.txt": b"Anything at all."})

    response = search(lawyer_api, case, q)

    assert response.status_code in (200, 400), response.content
    if response.status_code == 400:
        assert set(response.json()) == {"detail", "code"}
    else:
        assert response.json()["items"] == []


# Counted in autocommit, as a request runs: no savepoints of a test transaction among them.
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.slow
def test_search_runs_a_bounded_number_of_queries(
    lawyer_api: Client,
    case: Case,
    ingest: Callable[..., dict[str, Document]],
    django_assert_max_num_queries: Any,
) -> None:
    files = {
        f"doc-{i}.pdf": pdf_of(*(f"Novation on page {p} of {i}." for p in range(3)))
        for i in range(8)
    }
    ingest(lawyer_api, case, files)

    # Authentication (2), the case, the candidates, their ranking, the audit row.
    with django_assert_max_num_queries(6):
        results = hits(lawyer_api, case, "novation", limit=200)

    assert len(results) == 24
    assert {h["filename"] for h in results} == set(files)
