"""A backend's URL never reaches a health message (dashboard, API, events), and where the URL is
shown (repr, the admin's list) it carries no user:password@ or query-string secret."""

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import User
from apps.cluster.models import Backend, BackendHealth
from apps.cluster.services import health
from tests.cluster.dispatch_fixtures import backend_make, closed_port_url, deployment_make
from tests.conftest import session_client

SECRET_URL = "http://agent:hunter2pass@10.9.8.7:8080/v1?token=s3cr3t-value#frag"


def _assert_no_url(text: str, backend: Backend) -> None:
    for leak in ("://", "10.9.8.7", "127.0.0.1", "hunter2pass", "s3cr3t-value", backend.base_url):
        assert leak not in text, (leak, text)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
async def test_unreachable_backend_is_named_not_addressed_on_the_dashboard_and_in_the_api(
    lawyer: User,
) -> None:
    backend = await sync_to_async(backend_make)(base_url=closed_port_url(), name="gpu-a-llama")
    await sync_to_async(deployment_make)(backend)

    row = await health.backend_health_check(backend_id=backend.pk)

    assert row.state == BackendHealth.State.DOWN
    assert "gpu-a-llama" in row.message
    _assert_no_url(row.message, backend)
    client = await sync_to_async(session_client)(lawyer)
    api = await sync_to_async(client.get)("/api/v1/cluster/status")
    page = await sync_to_async(client.get)("/cluster/")
    assert row.message in api.content.decode()
    host_port = backend.base_url.removeprefix("http://")
    assert host_port not in api.content.decode() and host_port not in page.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "message",
    [
        f"Cannot connect to {SECRET_URL} (All connection attempts failed).",
        "Server error '502 Bad Gateway' for url 'http://10.9.8.7:8080/v1/chat/completions'",
        "[Errno 111] Connect call failed ('10.9.8.7', 8080)",
        "proxy said: see https://proxy.firm.lan/status?key=s3cr3t-value for details",
        "http://agent:hunter2pass@10.9.8.7:8080 answered 503",
    ],
    ids=["client-message", "httpx-status", "socket-tuple", "other-url", "credentials"],
)
def test_a_failed_call_stores_its_message_without_any_url_or_host(message: str) -> None:
    backend = backend_make(base_url=SECRET_URL, name="gpu-b-llama")

    health.backend_call_failed(backend_id=backend.pk, message=message)

    stored = BackendHealth.objects.get(pk=backend.pk).message
    assert stored
    _assert_no_url(stored, backend)


@pytest.mark.django_db
def test_a_message_that_names_no_url_is_kept_as_it_was() -> None:
    backend = backend_make(base_url=SECRET_URL, name="gpu-c-llama")

    health.backend_call_failed(backend_id=backend.pk, message="The model is still loading.")

    assert BackendHealth.objects.get(pk=backend.pk).message == "The model is still loading."


@pytest.mark.django_db
def test_repr_and_address_show_the_url_without_credentials_or_query() -> None:
    backend = backend_make(base_url=SECRET_URL, name="gpu-d-llama")

    assert backend.address == "http://10.9.8.7:8080/v1"
    assert repr(backend) == f"<Backend {backend.pk} gpu-d-llama llama_cpp http://10.9.8.7:8080/v1>"
    assert str(backend) == "gpu-d-llama"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://[fd00::7]:8080/", "http://[fd00::7]:8080/"),
        ("https://llm.firm.lan", "https://llm.firm.lan"),
        ("http://user@llm.firm.lan:11434?x=1", "http://llm.firm.lan:11434"),
    ],
)
def test_address_keeps_host_port_and_path(url: str, shown: str) -> None:
    assert Backend(name="x", base_url=url).address == shown


@pytest.mark.django_db
def test_admin_backend_list_shows_the_address_without_credentials(admin_user: User) -> None:
    backend_make(base_url=SECRET_URL, name="gpu-e-llama")

    page = session_client(admin_user).get("/admin/cluster/backend/")

    body = page.content.decode()
    assert page.status_code == 200
    assert "gpu-e-llama" in body and "http://10.9.8.7:8080/v1" in body
    assert "hunter2pass" not in body and "s3cr3t-value" not in body
