"""A backend's URL never reaches a health message (dashboard, API, events) nor what a failed call
tells its caller (the deployment and role instead; the call record keeps the address, for
admins), and where the URL is shown (repr, the admin's list) it carries no user:password@ or
query-string secret."""

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import User
from apps.cluster import labels
from apps.cluster.backends.base import BackendError, Timeouts
from apps.cluster.models import Backend, BackendHealth, Board, CallRecord, Deployment, Host
from apps.cluster.services import dispatch, health
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.cluster.dispatch_fixtures import (
    backend_make,
    closed_port_url,
    deployment_make,
    route_make,
)
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


# --- Calls: the caller is told the deployment and role; the call record keeps the address ---


def _route_to(base_url: str, role: str = "drafter") -> Deployment:
    backend = backend_make(base_url=base_url, name="gpu-f-llama", board="A")
    deployment = deployment_make(backend, model="qwen-a")
    route_make(role, deployment)
    return Deployment.objects.select_related("backend__board__host").get(pk=deployment.pk)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ({}, "Cannot connect to the drafter on board A of gpu-host-1 (deployment qwen-a on"),
        ({"disconnect_after_tokens": 2}, "cut the stream in the middle of an event"),
        ({"status_error": 500}, "answered 500"),
        ({"n_ctx_per_slot": 8}, "does not fit the context of one slot of the drafter on board A"),
        ({"hang_after_tokens": 1}, "stopped sending tokens: nothing for 0.3 s"),
    ],
    ids=["refused", "dropped", "500", "context", "timeout"],
)
async def test_a_failed_call_names_its_deployment_and_role_and_the_record_keeps_the_address(
    fault: dict[str, int], said: str
) -> None:
    settings = FakeSettings(kind="llama_cpp", tokens_per_second=5000, reply="one two three")
    async with FakeBackend(settings) as fake:
        for name, value in fault.items():
            setattr(fake.settings, name, value)
        url = fake.base_url if fault else closed_port_url()
        deployment = await sync_to_async(_route_to)(url)
        with pytest.raises(BackendError) as failed:
            await dispatch.chat_for_role(
                role="drafter",
                messages=[{"role": "user", "content": "Summarise the lease in a line."}],
                max_tokens=4,
                timeouts=Timeouts(between_tokens=0.3),
            )

    told = str(failed.value)
    assert said in told, told
    label = "the drafter on board A of gpu-host-1 (deployment qwen-a on gpu-f-llama)"
    assert labels.deployment_label(deployment, "drafter") == label
    assert label.lower() in told.lower()
    for leak in ("://", url.removeprefix("http://"), "127.0.0.1"):
        assert leak not in told, (leak, told)
    record = await CallRecord.objects.order_by("-pk").afirst()
    assert record is not None and url in record.error, record


@pytest.mark.django_db
def test_a_message_is_named_once_and_a_name_like_the_host_is_kept() -> None:
    # A host row named as the machine is (the URL's host is the same word).
    host = Host.objects.create(name="threadripper")
    board = Board.objects.create(host=host, name="B")
    backend = Backend.objects.create(
        name="llama-board-b", kind="llama_cpp", base_url="http://threadripper:8082/", board=board
    )
    deployment = deployment_make(backend, model="qwen3.5-122b-a10b")
    raw = "http://threadripper:8082 dropped the connection (ReadError: threadripper:8082 reset)."

    told = labels.deployment_message(raw, deployment=deployment, role="reasoner")

    assert told == (
        "The heavy reasoner on board B of threadripper (deployment qwen3.5-122b-a10b on "
        "llama-board-b) dropped the connection (ReadError: [host] reset)."
    )
    assert labels.deployment_message(told, deployment=deployment, role="reasoner") == told
    refusal = labels.deployment_message(
        "The prompt is 900 tokens; the slot holds 512.", deployment=deployment, role="gate"
    )
    assert refusal == (
        "The gate on board B of threadripper (deployment qwen3.5-122b-a10b on llama-board-b): "
        "The prompt is 900 tokens; the slot holds 512."
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "message",
    [
        "[Errno 111] Connect call failed ('10.9.8.7', 8080)",
        "Connect call failed ('fd00::7', 8080, 0, 0) via [fd00::7]:8080",
        "Cannot connect to http://agent:hunter2pass@10.9.8.7:8080 (refused)",
        "resolved gpu.firm.lan to 192.168.4.20:8080, which refused",
    ],
    ids=["ipv4-tuple", "ipv6", "credentials", "resolved-address"],
)
def test_no_address_of_any_form_survives(message: str) -> None:
    backend = backend_make(base_url=SECRET_URL, name="gpu-g-llama")
    deployment = deployment_make(backend)

    told = labels.deployment_message(message, deployment=deployment, role="adversary")

    assert told.startswith("The adversarial reviewer on board board-a of gpu-host-1")
    for leak in ("10.9.8.7", "fd00::7", "192.168.4.20", "hunter2pass", "://"):
        assert leak not in told, (leak, told)
