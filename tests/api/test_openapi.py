import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_openapi_schema_describes_every_endpoint_and_both_auth_schemes(client: Client) -> None:
    response = client.get("/api/v1/openapi.json")

    assert response.status_code == 200
    schema = response.json()
    paths = set(schema["paths"])
    assert {
        "/api/v1/me",
        "/api/v1/tokens",
        "/api/v1/tokens/{token_id}",
        "/api/v1/cases",
        "/api/v1/cases/{case_id}",
        "/api/v1/cases/{case_id}/members",
        "/api/v1/cases/{case_id}/members/{user_id}",
        "/api/v1/cases/{case_id}/worker-check",
    } <= paths
    schemes = schema["components"]["securitySchemes"]
    assert any(s.get("scheme") == "bearer" for s in schemes.values())
    assert any(s.get("in") == "cookie" for s in schemes.values())


def test_interactive_docs_are_served_from_our_own_static_files(client: Client) -> None:
    response = client.get("/api/v1/docs")

    assert response.status_code == 200
    page = response.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page
    # Nothing leaves the building: no CDN.
    assert "cdn." not in page and "https://" not in page.replace("https://swagger.io", "")
