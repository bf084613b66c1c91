"""Issue 22 requirement 4 (part): strict types. A request body's booleans, ids and numbers are
JSON booleans and numbers: "true", "5", 5.0 or true for an id are a 422 naming the field,
never coerced; what is sent right passes."""

from typing import Any

import pytest
from django.test import Client
from pydantic import ValidationError

from apps.cases.models import Case
from lexweb.api_schemas import StrictIn

pytestmark = pytest.mark.django_db


class Sample(StrictIn):
    flag: bool = False
    count: int = 0
    ratio: float = 0.0
    ids: list[int] = []
    maybe: int | None = None


@pytest.mark.parametrize(
    "body",
    [
        {"flag": "true"},
        {"flag": 1},
        {"count": "5"},
        {"count": 5.0},
        {"count": True},
        {"ratio": "0.5"},
        {"ratio": False},
        {"ids": [1, "2"]},
        {"ids": [True]},
        {"maybe": "7"},
    ],
)
def test_a_value_of_another_json_type_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="as JSON"):
        Sample(**body)


def test_values_of_their_own_type_pass() -> None:
    sample = Sample(flag=True, count=5, ratio=1, ids=[1, 2], maybe=None)
    assert (sample.flag, sample.count, sample.ratio, sample.ids, sample.maybe) == (
        True,
        5,
        1.0,
        [1, 2],
        None,
    )


def test_the_api_refuses_an_id_sent_as_a_string(lawyer_api: Client, case: Case) -> None:
    packet = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/packets", {"title": "Record"}, content_type="application/json"
    )
    assert packet.status_code == 201, packet.content
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/packets/{packet.json()['id']}/items",
        {"items": [{"document_id": "1", "reason": "Exhibit"}]},
        content_type="application/json",
    )

    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid"
    assert any("document_id" in error["loc"] for error in body["errors"]), body
