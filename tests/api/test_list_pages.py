"""Issue 22 requirement 4 (part): every list of the API is `{items, count, next}`; `next` is the
next page's path and query (the same filters, the offset moved on by the limit), null on the
last page; following it from the first page reads every item once."""

from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case, Membership
from tests.factories import CaseFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def cases(lawyer: User, case: Case) -> list[int]:
    """Seven cases of the lawyer's (the fixture's own and six more)."""
    ids = [case.pk]
    for n in range(6):
        other = CaseFactory(title=f"Matter {n}", created_by=lawyer)
        Membership.objects.create(case=other, user=lawyer, role="lawyer")
        ids.append(other.pk)
    return ids


def _get(client: Client, path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, response.content[:500]
    return response.json()


def test_following_next_reads_every_item_once_then_stops(
    lawyer_api: Client, cases: list[int]
) -> None:
    seen: list[int] = []
    path: str | None = "/api/v1/cases?limit=3"
    pages = 0
    while path is not None:
        page = _get(lawyer_api, path)
        assert set(page) == {"items", "count", "next"}
        assert page["count"] == len(cases)
        seen += [item["id"] for item in page["items"]]
        path = page["next"]
        pages += 1
        assert pages <= 5, "next never ended"
    assert pages == 3
    assert sorted(seen) == sorted(cases)


def test_next_keeps_the_query_and_the_limit(lawyer_api: Client, cases: list[int]) -> None:
    # Whatever else the query says (a list's filters) goes on to the next page unchanged.
    page = _get(lawyer_api, "/api/v1/cases?limit=2&offset=1&order=newest")

    assert page["count"] == 7 and len(page["items"]) == 2
    path, _, query = page["next"].partition("?")
    assert path == "/api/v1/cases"
    assert sorted(query.split("&")) == ["limit=2", "offset=3", "order=newest"]


def test_the_last_page_and_an_empty_list_have_no_next(lawyer_api: Client, cases: list[int]) -> None:
    assert _get(lawyer_api, "/api/v1/cases?limit=200")["next"] is None
    assert _get(lawyer_api, "/api/v1/cases?offset=1000")["items"] == []
    assert _get(lawyer_api, "/api/v1/cases?offset=1000")["next"] is None


@pytest.mark.slow
def test_every_paged_list_of_the_schema_has_next(client: Client) -> None:
    schema = client.get("/api/v1/openapi.json").json()
    paged = {
        name: component
        for name, component in schema["components"]["schemas"].items()
        if name.startswith("Paged")
    }
    assert paged, "no paged lists in the schema"
    for name, component in paged.items():
        assert set(component["properties"]) == {"items", "count", "next"}, name
        assert component["properties"]["next"]["anyOf"][1] == {"type": "null"}, name


@pytest.mark.django_db
def test_an_offset_past_what_postgresql_counts_is_a_422_not_a_500(lawyer_api: Client) -> None:
    # Found by tests/api/test_schema_fuzz.py: 2**64 reached the query as OFFSET, a bigint.
    response = lawyer_api.get("/api/v1/cases", {"offset": 2**64})

    assert response.status_code == 422, response.content
    assert response.json()["code"] == "invalid"
