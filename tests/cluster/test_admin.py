"""The cluster configuration in the Django admin: every list opens for an admin, nobody else
gets in, and a backend's API key is write-only."""

import pytest
from django.test import Client

from apps.cluster.models import Backend, Board, Deployment, Gpu, Host
from apps.cluster.services import site
from tests.cluster.test_site import SMALL

pytestmark = pytest.mark.django_db

MODELS = [
    "host",
    "board",
    "gpu",
    "gpulink",
    "backend",
    "backendhealth",
    "deployment",
    "roleroute",
    "gpustatus",
    "gpusample",
    "callrecord",
]


@pytest.fixture
def loaded() -> None:
    site.site_load(
        text=SMALL.replace("board: b, slots: 2}", 'board: b, slots: 2, api_key: "sk-secret-123"}')
    )


@pytest.mark.parametrize("model", MODELS)
def test_admin_opens_every_cluster_list_and_the_key_is_never_shown(
    admin_client_: Client, loaded: None, model: str
) -> None:
    response = admin_client_.get(f"/admin/cluster/{model}/")

    assert response.status_code == 200
    assert b"sk-secret-123" not in response.content


def test_non_admins_do_not_get_into_the_cluster_admin(lawyer_client: Client, loaded: None) -> None:
    response = lawyer_client.get("/admin/cluster/backend/")

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def _backend_form(backend: Backend, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "name": backend.name,
        "kind": backend.kind,
        "base_url": backend.base_url,
        "board": backend.board_id,
        "slots": backend.slots,
        "api_key": "",
        "enabled": "on",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_backend_page_never_renders_the_key_and_a_blank_key_keeps_it(
    admin_client_: Client, loaded: None
) -> None:
    backend = Backend.objects.get()
    page = admin_client_.get(f"/admin/cluster/backend/{backend.pk}/change/")
    assert page.status_code == 200
    assert b"sk-secret-123" not in page.content

    response = admin_client_.post(
        f"/admin/cluster/backend/{backend.pk}/change/", _backend_form(backend, slots=3)
    )

    assert response.status_code == 302
    backend.refresh_from_db()
    assert (backend.slots, backend.api_key) == (3, "sk-secret-123")


def test_backend_key_can_be_replaced_and_removed(admin_client_: Client, loaded: None) -> None:
    backend = Backend.objects.get()
    url = f"/admin/cluster/backend/{backend.pk}/change/"

    admin_client_.post(url, _backend_form(backend, api_key="sk-new"))
    backend.refresh_from_db()
    assert backend.api_key == "sk-new"
    admin_client_.post(url, _backend_form(backend, clear_api_key="on"))
    backend.refresh_from_db()
    assert backend.api_key == ""


@pytest.mark.parametrize(
    "bad",
    [
        {"base_url": "file:///etc/passwd"},
        {"base_url": "javascript:alert(1)"},
        {"base_url": "http://" + "a" * 400 + ".test"},
        {"slots": "0"},
        {"slots": "100000"},
        {"kind": "vllm"},
        {"name": ""},
        {"api_key": "k" * 500},
    ],
)
def test_bad_backend_form_shows_an_error_and_changes_nothing(
    admin_client_: Client, loaded: None, bad: dict[str, object]
) -> None:
    backend = Backend.objects.get()
    before = Backend.objects.values().get()

    response = admin_client_.post(
        f"/admin/cluster/backend/{backend.pk}/change/", _backend_form(backend, **bad)
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    # The field itself, or the model's check constraint (slots >= 1) for the whole form.
    assert set(bad) & set(errors) or (bad == {"slots": "0"} and "__all__" in errors), errors
    assert Backend.objects.values().get() == before


@pytest.mark.parametrize("url", ["http://10.0.0.5:8080/v1?token=abc", "http://10.0.0.5:8080#part"])
def test_a_base_url_with_a_query_string_or_fragment_is_refused_with_a_clear_message(
    admin_client_: Client, loaded: None, url: str
) -> None:
    backend = Backend.objects.get()
    before = Backend.objects.values().get()

    response = admin_client_.post(
        f"/admin/cluster/backend/{backend.pk}/change/", _backend_form(backend, base_url=url)
    )

    assert response.status_code == 200
    (message,) = response.context["adminform"].form.errors["base_url"]
    assert "takes no query string or fragment" in message
    assert Backend.objects.values().get() == before


CREDENTIALS_URL = "http://agent:hunter2pass@10.9.8.7:8080/v1"
MASKED_URL = "http://agent:********@10.9.8.7:8080/v1"


@pytest.fixture
def with_password(loaded: None) -> Backend:
    Backend.objects.update(base_url=CREDENTIALS_URL)
    return Backend.objects.get()


def test_backend_change_page_masks_the_password_and_sent_back_unchanged_keeps_it(
    admin_client_: Client, with_password: Backend
) -> None:
    url = f"/admin/cluster/backend/{with_password.pk}/change/"
    page = admin_client_.get(url)
    assert page.status_code == 200
    assert b"hunter2pass" not in page.content
    assert page.context["adminform"].form["base_url"].value() == MASKED_URL

    response = admin_client_.post(url, _backend_form(with_password, base_url=MASKED_URL, slots=3))

    assert response.status_code == 302
    with_password.refresh_from_db()
    assert (with_password.base_url, with_password.slots) == (CREDENTIALS_URL, 3)


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("http://agent:n3w-pass@10.9.8.7:8080/v1", "http://agent:n3w-pass@10.9.8.7:8080/v1"),
        ("http://agent:********@10.9.8.7:8080/v2", "http://agent:hunter2pass@10.9.8.7:8080/v2"),
        ("http://10.9.8.7:8080/v1", "http://10.9.8.7:8080/v1"),
    ],
    ids=["new-password", "new-path-same-place", "credentials-removed"],
)
def test_backend_base_url_credentials_can_be_changed(
    admin_client_: Client, with_password: Backend, sent: str, stored: str
) -> None:
    response = admin_client_.post(
        f"/admin/cluster/backend/{with_password.pk}/change/",
        _backend_form(with_password, base_url=sent),
    )

    assert response.status_code == 302
    with_password.refresh_from_db()
    assert with_password.base_url == stored


@pytest.mark.parametrize(
    "sent",
    [
        "http://agent:********@10.66.6.6:8080/v1",
        "http://agent:********@10.9.8.7:9999/v1",
        "https://agent:********@10.9.8.7:8080/v1",
        "http://other:********@10.9.8.7:8080/v1",
    ],
    ids=["other-host", "other-port", "other-scheme", "other-user"],
)
def test_the_masked_password_is_not_carried_to_another_place(
    admin_client_: Client, with_password: Backend, sent: str
) -> None:
    response = admin_client_.post(
        f"/admin/cluster/backend/{with_password.pk}/change/",
        _backend_form(with_password, base_url=sent),
    )

    assert response.status_code == 200
    (message,) = response.context["adminform"].form.errors["base_url"]
    assert "Type the password in the base URL again" in message
    assert b"hunter2pass" not in response.content
    with_password.refresh_from_db()
    assert with_password.base_url == CREDENTIALS_URL


def test_a_masked_password_on_a_new_backend_is_refused(
    admin_client_: Client, with_password: Backend
) -> None:
    data = _backend_form(with_password, name="new-one", base_url=MASKED_URL)

    response = admin_client_.post("/admin/cluster/backend/add/", data)

    assert response.status_code == 200
    assert "base_url" in response.context["adminform"].form.errors
    assert not Backend.objects.filter(name="new-one").exists()


def test_gpu_inline_offers_only_the_hosts_own_boards(admin_client_: Client, loaded: None) -> None:
    other = Host.objects.create(name="elsewhere")
    Board.objects.create(host=other, name="foreign-board")
    host = Host.objects.get(name="h1")

    page = admin_client_.get(f"/admin/cluster/host/{host.pk}/change/")

    assert page.status_code == 200
    assert b"foreign-board" not in page.content


def _host_with_proposal(proposal: object) -> Host:
    host = Host.objects.create(name="tr", proposed_boards=proposal)
    for index in range(4):
        Gpu.objects.create(host=host, index=index, name="V100", memory_bytes=2**35)
    return host


def test_admin_accepts_the_agents_proposal_as_boards(admin_client_: Client) -> None:
    host = _host_with_proposal([[0, 1], [2, 3]])

    response = admin_client_.post(
        "/admin/cluster/host/",
        {"action": "accept_proposed_boards", "_selected_action": [host.pk]},
        follow=True,
    )

    assert response.status_code == 200
    groups = {
        tuple(sorted(board.gpus.values_list("index", flat=True)))
        for board in Board.objects.filter(host=host)
    }
    assert groups == {(0, 1), (2, 3)}


def test_an_edited_proposal_naming_unknown_gpus_is_refused_with_a_message(
    admin_client_: Client,
) -> None:
    host = _host_with_proposal([[0, 1], [2, 9]])

    response = admin_client_.post(
        "/admin/cluster/host/",
        {"action": "accept_proposed_boards", "_selected_action": [host.pk]},
        follow=True,
    )

    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert any(m.startswith("tr: ") and "9" in m for m in shown), shown
    assert not Board.objects.exists()


def _big_deployment_on_two_gpus() -> None:
    """SMALL with 40 GB of weights: it needs both 32 GiB GPUs of board b; a second, empty
    board c with one GPU of the same host."""
    text = SMALL.replace("weights_bytes: 1000,", "weights_bytes: 40_000_000_000,")
    text = text.replace(
        "      - {index: 1, name: V100, memory_bytes: 34_359_738_368}",
        "      - {index: 1, name: V100, memory_bytes: 34_359_738_368}\n"
        "      - {index: 2, name: V100, memory_bytes: 34_359_738_368}",
    ).replace(
        "      - {name: b, gpus: [0, 1]}",
        "      - {name: b, gpus: [0, 1]}\n      - {name: c, gpus: [2]}",
    )
    site.site_load(text=text)


def test_moving_a_backend_to_a_board_its_model_does_not_fit_is_refused(
    admin_client_: Client,
) -> None:
    _big_deployment_on_two_gpus()
    backend = Backend.objects.get()
    small_board = Board.objects.get(name="c")

    response = admin_client_.post(
        f"/admin/cluster/backend/{backend.pk}/change/", _backend_form(backend, board=small_board.pk)
    )

    assert response.status_code == 200
    assert "needs" in str(response.context["adminform"].form.errors["board"])
    assert Backend.objects.get().board.name == "b"


def _gpu_form(gpu: Gpu, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "host": gpu.host_id,
        "index": gpu.index,
        "name": gpu.name,
        "memory_bytes": gpu.memory_bytes,
        "compute_capability": gpu.compute_capability,
        "pci_bus_id": gpu.pci_bus_id,
        "uuid": gpu.uuid,
        "board": gpu.board_id or "",
    }
    data.update(changes)
    return data


def test_taking_a_gpu_off_the_board_a_model_needs_is_refused(admin_client_: Client) -> None:
    _big_deployment_on_two_gpus()
    gpu = Gpu.objects.get(index=1)

    response = admin_client_.post(f"/admin/cluster/gpu/{gpu.pk}/change/", _gpu_form(gpu, board=""))

    assert response.status_code == 200
    assert "needs" in str(response.context["adminform"].form.errors["board"])
    assert Gpu.objects.get(index=1).board.name == "b"


def test_a_gpu_cannot_join_a_board_of_another_host(admin_client_: Client, loaded: None) -> None:
    foreign = Board.objects.create(host=Host.objects.create(name="elsewhere"), name="far")
    gpu = Gpu.objects.get(index=0)

    response = admin_client_.post(
        f"/admin/cluster/gpu/{gpu.pk}/change/", _gpu_form(gpu, board=foreign.pk)
    )

    assert response.status_code == 200
    assert "board" in response.context["adminform"].form.errors
    assert Gpu.objects.get(index=0).board.name == "b"


def test_a_free_gpu_may_change_board(admin_client_: Client) -> None:
    _big_deployment_on_two_gpus()
    gpu = Gpu.objects.get(index=2)
    board_b = Board.objects.get(name="b")

    response = admin_client_.post(
        f"/admin/cluster/gpu/{gpu.pk}/change/", _gpu_form(gpu, board=board_b.pk)
    )

    assert response.status_code == 302
    assert Gpu.objects.get(index=2).board == board_b


@pytest.mark.parametrize(
    ("sampling", "message"),
    [
        ('{"temperature": NaN}', "finite"),
        ('{"temperature": "hot"}', "must be a number"),
        ("[0.2]", "JSON object"),
        ("{not json", "Enter a valid JSON"),
    ],
)
def test_bad_sampling_presets_are_a_form_error(
    admin_client_: Client, loaded: None, sampling: str, message: str
) -> None:
    deployment = Deployment.objects.get()
    data = {
        field: getattr(deployment, field)
        for field in (
            "model_name", "architecture", "total_params", "active_params", "quantization",
            "file_size_bytes", "weights_bytes", "n_layers", "n_kv_heads", "head_dim_k",
            "head_dim_v", "context_size", "kv_cache_type", "parallel_slots",
        )
    }  # fmt: skip
    data.update(
        backend=deployment.backend_id,
        enabled="on",
        sampling=sampling,
        **{
            "routes-TOTAL_FORMS": "0",
            "routes-INITIAL_FORMS": "0",
            "routes-MIN_NUM_FORMS": "0",
            "routes-MAX_NUM_FORMS": "1000",
        },
    )

    response = admin_client_.post(f"/admin/cluster/deployment/{deployment.pk}/change/", data)

    assert response.status_code == 200
    assert message in str(response.context["adminform"].form.errors["sampling"])
    assert Deployment.objects.get().sampling == {}
