"""Past RANK_CANDIDATES matching pages, search ranks a first slice and says so."""

import io

import pytest
from django.contrib.postgres.search import SearchVector
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import selectors, services
from apps.documents.models import Page

pytestmark = pytest.mark.django_db


def _many_pages(lawyer: User, case: Case, count: int) -> None:
    outcome = services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="big.txt",
        source=io.BytesIO(b"x"),
        origin="client",
    )
    assert outcome.document is not None
    Page.objects.bulk_create(
        Page(
            document=outcome.document,
            number=n,
            source="text_file",
            text=f"page {n} mentions the widget contract" + " widget" * (n % 7),
        )
        for n in range(1, count + 1)
    )
    Page.objects.update(search_vector=SearchVector("text", config="english"))


def test_a_query_matching_more_pages_than_are_ranked_is_flagged_as_capped(
    lawyer: User, case: Case, lawyer_client: Client
) -> None:
    _many_pages(lawyer, case, selectors.RANK_CANDIDATES + 5)

    results = selectors.page_search_for_user(user=lawyer, case_id=case.pk, query="widget")
    api = lawyer_client.get(f"/api/v1/cases/{case.pk}/search", {"q": "widget", "limit": 5})
    page = lawyer_client.get(f"/cases/{case.pk}/search/", {"q": "widget"})

    assert results.capped is True and len(results) == 200
    assert api.json()["capped"] is True and len(api.json()["items"]) == 5
    assert "pages match: these are the best of the first 1,000" in page.content.decode()


def test_a_query_within_the_ranked_slice_is_exact_and_not_capped(lawyer: User, case: Case) -> None:
    _many_pages(lawyer, case, 30)

    results = selectors.page_search_for_user(user=lawyer, case_id=case.pk, query="widget")

    assert results.capped is False
    ranks = [hit.rank for hit in results]
    assert ranks == sorted(ranks, reverse=True) and len(results) == 30
