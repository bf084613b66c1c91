"""Words a person reads in the Django admin (issue 25 req 6): stored codes by their labels, and
sizes, memory and JSON in words, on the lists and pages beyond the cluster's telemetry (which
tests/test_words_pages.py shows): a call's role and how its reply ended, a board's memory, a
host's proposed boards, a backend's loaded models, a GPU's processes, and where an audit event
came from and its detail."""

import pytest
from django.test import Client
from django.utils import timezone

from apps.accounts.models import AuditEvent
from apps.cluster.models import (
    Backend,
    BackendHealth,
    Board,
    CallRecord,
    Gpu,
    GpuStatus,
    Host,
)

pytestmark = pytest.mark.django_db

GIB = 2**30


def _call(role: str, **fields: object) -> CallRecord:
    return CallRecord.objects.create(
        deployment_label="qwen-a on llama-board-a",
        board_label="board A",
        role=role,
        outcome=CallRecord.Outcome.OK,
        **fields,
    )


def test_a_calls_role_is_shown_by_its_label_and_still_sorts(admin_client_: Client) -> None:
    _call("reasoner")
    drafter = _call("drafter", finish_reason="length")
    _call("")

    response = admin_client_.get("/admin/cluster/callrecord/")
    html = response.content.decode()

    assert '<td class="field-role_name">Drafter</td>' in html
    assert '<td class="field-role_name">Heavy reasoner</td>' in html
    assert '<td class="field-role_name">no role (a direct call)</td>' in html
    assert ">drafter<" not in html and ">reasoner<" not in html
    # Sorting by the column sorts by the stored role.
    changelist = response.context["cl"]
    column = changelist.list_display.index("role_name")
    assert "sortable column-role_name" in html
    ordered = admin_client_.get(f"/admin/cluster/callrecord/?o={column}").context["cl"]
    assert [record.role for record in ordered.result_list] == ["", "drafter", "reasoner"]

    page = admin_client_.get(f"/admin/cluster/callrecord/{drafter.pk}/change/").content.decode()
    assert "Drafter" in page and "stopped at the token limit (length)" in page
    assert '<div class="readonly">drafter</div>' not in page
    assert '<div class="readonly">length</div>' not in page


def test_a_boards_memory_and_a_hosts_proposed_boards_are_in_words(admin_client_: Client) -> None:
    host = Host.objects.create(name="threadripper", proposed_boards=[[0, 1], [2]])
    board = Board.objects.create(host=host, name="board A")
    for index in (0, 1):
        Gpu.objects.create(
            host=host, board=board, index=index, name="NVIDIA H100", memory_bytes=80 * GIB
        )

    boards = admin_client_.get("/admin/cluster/board/").content.decode()
    hosts = admin_client_.get("/admin/cluster/host/").content.decode()

    assert "160.0 GiB" in boards and "(GiB)" not in boards
    assert "GPUs 0, 1 · GPU 2" in hosts
    assert "[[0, 1], [2]]" not in hosts


def test_a_backends_models_and_a_gpus_processes_are_in_words(admin_client_: Client) -> None:
    host = Host.objects.create(name="threadripper")
    board = Board.objects.create(host=host, name="board A")
    gpu = Gpu.objects.create(host=host, board=board, index=0, name="H100", memory_bytes=80 * GIB)
    backend = Backend.objects.create(
        name="llama-a", kind=Backend.Kind.LLAMA_CPP, base_url="http://10.0.0.5:8080", board=board
    )
    BackendHealth.objects.create(backend=backend, models_loaded=["qwen-a.gguf", "llama-b"])
    status = GpuStatus.objects.create(
        gpu=gpu,
        sampled_at=timezone.now(),
        memory_used_bytes=12 * GIB,
        memory_total_bytes=80 * GIB,
        processes=[
            {"pid": 4242, "name": "llama-server", "used_memory_bytes": 12 * GIB},
            {"pid": 77, "name": "", "used_memory_bytes": None},
        ],
    )

    health = admin_client_.get(
        f"/admin/cluster/backendhealth/{backend.pk}/change/"
    ).content.decode()
    gpu_page = admin_client_.get(f"/admin/cluster/gpustatus/{status.pk}/change/").content.decode()

    assert "qwen-a.gguf, llama-b" in health and "[&quot;qwen-a.gguf&quot;" not in health
    assert "llama-server (pid 4242): 12.0 GiB" in gpu_page
    assert "a process (pid 77): memory not known" in gpu_page
    assert str(12 * GIB) not in gpu_page and "used_memory_bytes" not in gpu_page


def test_an_audit_events_origin_and_detail_are_in_words(admin_client_: Client) -> None:
    event = AuditEvent.objects.create(
        actor_label="Ada Admin",
        action="admin.change",
        target_label="llama-a",
        via="api",
        detail={
            "model": "cluster.backend",
            "fields": "slots,enabled",
            "before.slots": 2,
            "after.slots": 3,
            "after.enabled": False,
            "before.board": None,
        },
    )
    AuditEvent.objects.create(actor_label="Ada Admin", action="auth.login", via="web")

    listing = admin_client_.get("/admin/accounts/auditevent/").content.decode()
    page = admin_client_.get(f"/admin/accounts/auditevent/{event.pk}/change/").content.decode()

    assert '<td class="field-origin">the REST API</td>' in listing
    assert ">the web app</a>" in listing  # the filter, by its label
    assert ">api</a>" not in listing and ">web</a>" not in listing
    assert "<div>Slots before: 2</div>" in page and "<div>Slots after: 3</div>" in page
    assert "<div>Enabled after: no</div>" in page and "<div>Board before: empty</div>" in page
    assert "<div>Fields changed: slots,enabled</div>" in page and "before.slots" not in page
    assert "the REST API" in page
    assert "&quot;before.slots&quot;" not in page
