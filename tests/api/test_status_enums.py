"""Issue 22 requirement 4 (part): every status of the contract is an enum in OpenAPI, its
values the model's own, with the terminal ones listed (`x-terminal`, and in words in its
description); a value outside the enum fails the response as a bug instead of reaching a client."""

from typing import Any

import pytest
from django.db import models
from django.test import Client
from pydantic import BaseModel, ValidationError

from apps.documents.models import Document, Production, ProductionExport, Rendition
from apps.drafting.models import Run, Stage
from apps.evidence.models import Packet
from apps.verification.models import Finding, Verification
from lexweb.api_schemas import status_type

# (component, property): the model whose choices it carries and its terminal values.
STATUSES: dict[tuple[str, str], tuple[type[models.TextChoices], set[str]]] = {
    ("DocumentOut", "status"): (Document.Status, {"ready", "failed"}),
    ("RenditionOut", "status"): (Rendition.Status, {"ready", "failed", "unavailable"}),
    ("ProductionOut", "status"): (Production.Status, {"ready", "failed"}),
    ("ExportOut", "status"): (ProductionExport.Status, {"ready", "failed"}),
    ("PacketOut", "status"): (Packet.Status, {"frozen"}),
    ("RunOut", "status"): (Run.Status, {"succeeded", "failed", "cancelled", "rejected"}),
    ("StageOut", "status"): (Stage.Status, {"succeeded", "failed", "cancelled", "skipped"}),
    ("VerificationOut", "status"): (Verification.Status, {"done", "failed"}),
    ("FindingOut", "status"): (Finding.Status, set()),
}


@pytest.fixture(scope="module")
def components() -> dict[str, Any]:
    client = Client()
    schema = client.get("/api/v1/openapi.json").json()
    found: dict[str, Any] = schema["components"]["schemas"]
    return found


@pytest.mark.parametrize("where", list(STATUSES), ids=lambda where: ".".join(where))
def test_each_status_is_an_enum_of_the_models_values_with_its_terminal_ones(
    components: dict[str, Any], where: tuple[str, str]
) -> None:
    component, prop = where
    choices, terminal = STATUSES[where]
    field = components[component]["properties"][prop]

    assert field["type"] == "string"
    assert field["enum"] == [str(value) for value in choices.values]
    assert set(field.get("x-terminal", [])) == terminal
    for value in terminal:
        assert value in field["description"]


def test_a_value_outside_the_enum_fails_validation() -> None:
    class Out(BaseModel):
        status: status_type(Run.Status, terminal=["succeeded"], about="x")  # type: ignore[valid-type]

    assert Out(status="running").status == "running"
    with pytest.raises(ValidationError, match="is not one of"):
        Out(status="exploded")


def test_a_terminal_value_that_is_not_a_choice_is_refused_at_import() -> None:
    with pytest.raises(ValueError, match="not among"):
        status_type(Run.Status, terminal=["finished"], about="x")
