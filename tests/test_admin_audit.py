"""Changes made in the Django admin are audited: who, what, the values before and after, never
a key or a password hash. Through the real admin pages, as an admin signed in."""

import json
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.test import Client, RequestFactory

from apps.accounts import services as account_services
from apps.accounts.admin_audit import AuditedAdmin, shown_value
from apps.accounts.models import ApiToken, AuditEvent, User
from apps.cases.models import Case
from apps.cluster.models import Backend, Board, Gpu, GpuLink, Host, RoleRoute
from apps.cluster.services import site
from tests.cluster.test_admin import _backend_form, _gpu_form, _host_with_proposal
from tests.cluster.test_site import SMALL
from tests.conftest import session_client
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

SECRET = "sk-secret-123"


@pytest.fixture
def loaded() -> None:
    site.site_load(
        text=SMALL.replace("board: b, slots: 2}", f'board: b, slots: 2, api_key: "{SECRET}"}}')
    )


def _events(action: str, model: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action, detail__model=model).order_by("id"))


def _everything_recorded() -> str:
    return json.dumps(
        [
            [e.action, e.actor_label, e.target_label, e.detail]
            for e in AuditEvent.objects.order_by("id")
        ]
    )


def test_backend_change_records_who_fields_before_and_after_and_never_the_key(
    admin_client_: Client, admin_user: User, loaded: None
) -> None:
    backend = Backend.objects.get()

    response = admin_client_.post(
        f"/admin/cluster/backend/{backend.pk}/change/",
        _backend_form(backend, slots=3, api_key="sk-brand-new-456"),
    )

    assert response.status_code == 302
    [event] = _events("admin.change", "cluster.backend")
    assert (event.actor, event.via, event.target_id) == (admin_user, "web", str(backend.pk))
    assert event.detail["fields"] == "slots,api_key"
    assert (event.detail["before.slots"], event.detail["after.slots"]) == (2, 3)
    assert event.detail["before.api_key"] == event.detail["after.api_key"] == "(set)"
    recorded = _everything_recorded()
    assert SECRET not in recorded and "sk-brand-new-456" not in recorded


def test_removing_a_key_is_recorded_as_set_to_empty(admin_client_: Client, loaded: None) -> None:
    backend = Backend.objects.get()

    admin_client_.post(
        f"/admin/cluster/backend/{backend.pk}/change/",
        _backend_form(backend, clear_api_key="on"),
    )

    [event] = _events("admin.change", "cluster.backend")
    assert (event.detail["before.api_key"], event.detail["after.api_key"]) == ("(set)", "(empty)")
    assert SECRET not in _everything_recorded()


def test_a_url_is_recorded_without_its_user_password(admin_client_: Client, loaded: None) -> None:
    # (A query string, which may carry a key too, is refused by the form: tests/cluster.)
    backend = Backend.objects.get()

    response = admin_client_.post(
        f"/admin/cluster/backend/{backend.pk}/change/",
        _backend_form(backend, base_url="http://ops:hunter2@10.0.0.5:8080/v1"),
    )

    assert response.status_code == 302
    [event] = _events("admin.change", "cluster.backend")
    assert event.detail["after.base_url"] == "http://10.0.0.5:8080/v1"
    assert "hunter2" not in _everything_recorded()


def test_saving_without_changes_records_nothing(admin_client_: Client, loaded: None) -> None:
    backend = Backend.objects.get()

    response = admin_client_.post(
        f"/admin/cluster/backend/{backend.pk}/change/", _backend_form(backend)
    )

    assert response.status_code == 302
    assert not AuditEvent.objects.filter(action__startswith="admin.").exists()


def test_gpu_moved_to_another_board_records_the_board_before_and_after(
    admin_client_: Client, loaded: None
) -> None:
    gpu = Gpu.objects.get(index=1)
    board_b = gpu.board
    assert board_b is not None
    spare = Board.objects.create(host=gpu.host, name="spare")
    # Free the GPU first: the deployment on board b needs only GPU 0's memory.
    response = admin_client_.post(
        f"/admin/cluster/gpu/{gpu.pk}/change/", _gpu_form(gpu, board=spare.pk)
    )

    assert response.status_code == 302
    [event] = _events("admin.change", "cluster.gpu")
    assert event.detail["fields"] == "board"
    assert (event.detail["before.board"], event.detail["after.board"]) == (board_b.pk, spare.pk)


def test_host_added_with_gpus_inline_records_the_host_and_each_gpu(
    admin_client_: Client,
) -> None:
    data: dict[str, Any] = {
        "name": "new-host",
        "description": "rack 4",
        "proposed_boards": "[]",
        "gpus-TOTAL_FORMS": "2",
        "gpus-INITIAL_FORMS": "0",
        "gpus-MIN_NUM_FORMS": "0",
        "gpus-MAX_NUM_FORMS": "1000",
    }
    for i in range(2):
        data |= {
            f"gpus-{i}-index": str(i),
            f"gpus-{i}-name": "A100",
            f"gpus-{i}-memory_bytes": str(80 * 2**30),
            f"gpus-{i}-compute_capability": "8.0",
            f"gpus-{i}-pci_bus_id": f"0000:0{i}:00.0",
            f"gpus-{i}-uuid": f"GPU-{i}",
            f"gpus-{i}-board": "",
        }

    response = admin_client_.post("/admin/cluster/host/add/", data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    [host_event] = _events("admin.add", "cluster.host")
    assert host_event.detail["after.name"] == "new-host"
    assert host_event.detail["after.description"] == "rack 4"
    gpu_events = _events("admin.add", "cluster.gpu")
    assert sorted(e.detail["after.index"] for e in gpu_events) == [0, 1]
    assert {e.detail["after.host"] for e in gpu_events} == {Host.objects.get(name="new-host").pk}


def test_deleting_a_board_records_its_values(admin_client_: Client, loaded: None) -> None:
    host = Host.objects.get(name="h1")
    spare = Board.objects.create(host=host, name="spare")

    response = admin_client_.post(f"/admin/cluster/board/{spare.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    [event] = _events("admin.delete", "cluster.board")
    assert (event.target_id, event.detail["before.name"]) == (str(spare.pk), "spare")
    assert event.detail["before.host"] == host.pk
    assert "admin_action" not in event.detail
    assert not Board.objects.filter(pk=spare.pk).exists()


def test_deleting_a_host_records_how_many_rows_went_with_it(admin_client_: Client) -> None:
    host = _host_with_proposal([[0, 1], [2, 3]])

    response = admin_client_.post(f"/admin/cluster/host/{host.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    [event] = _events("admin.delete", "cluster.host")
    assert event.detail["before.name"] == "tr"
    assert event.detail["cascade.cluster.gpu"] == 4
    assert not Host.objects.exists()


def test_bulk_delete_records_each_row(admin_client_: Client, loaded: None) -> None:
    routes = list(RoleRoute.objects.all())
    assert routes

    response = admin_client_.post(
        "/admin/cluster/roleroute/",
        {"action": "delete_selected", "_selected_action": [r.pk for r in routes], "post": "yes"},
    )

    assert response.status_code == 302
    events = _events("admin.delete", "cluster.roleroute")
    assert sorted(int(e.target_id) for e in events) == sorted(r.pk for r in routes)
    assert {e.detail["admin_action"] for e in events} == {"delete_selected"}
    assert {e.detail["before.role"] for e in events} == {r.role for r in routes}
    assert not RoleRoute.objects.exists()


def test_an_action_records_what_it_selected_and_each_row_it_changed(
    admin_client_: Client, admin_user: User
) -> None:
    host = _host_with_proposal([[0, 1], [2, 3]])

    response = admin_client_.post(
        "/admin/cluster/host/",
        {"action": "accept_proposed_boards", "_selected_action": [host.pk]},
    )

    assert response.status_code == 302
    [summary] = AuditEvent.objects.filter(action="admin.action")
    assert summary.actor == admin_user
    assert summary.detail["admin_action"] == "accept_proposed_boards"
    assert summary.detail["selected"] == str(host.pk)
    assert summary.detail["rows_changed"] == 4
    gpu_events = _events("admin.change", "cluster.gpu")
    assert len(gpu_events) == 4
    assert {e.detail["before.board"] for e in gpu_events} == {None}
    assert {e.detail["admin_action"] for e in gpu_events} == {"accept_proposed_boards"}
    assert len({e.detail["after.board"] for e in gpu_events}) == 2


def test_an_action_that_changes_nothing_is_still_recorded(admin_client_: Client) -> None:
    host = _host_with_proposal([[0, 1], [2, 9]])  # refused: GPU 9 is unknown

    admin_client_.post(
        "/admin/cluster/host/",
        {"action": "accept_proposed_boards", "_selected_action": [host.pk]},
    )

    [summary] = AuditEvent.objects.filter(action="admin.action")
    assert summary.detail["rows_changed"] == 0
    assert not _events("admin.change", "cluster.gpu")


def test_gpu_link_added_in_the_admin_is_recorded(admin_client_: Client, loaded: None) -> None:
    a, b = Gpu.objects.order_by("index")

    response = admin_client_.post(
        "/admin/cluster/gpulink/add/", {"a": a.pk, "b": b.pk, "kind": "nvlink", "nvlink_count": 4}
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    [event] = _events("admin.add", "cluster.gpulink")
    assert (event.detail["after.a"], event.detail["after.b"]) == (a.pk, b.pk)
    assert event.target_id == str(GpuLink.objects.get().pk)


# --- Users and tokens ---------------------------------------------------------------------


def test_user_change_records_before_and_after_and_never_the_password_hash(
    admin_client_: Client, lawyer: User
) -> None:
    lawyer.set_password("a long enough passphrase")
    lawyer.save()
    stored_hash = User.objects.get(pk=lawyer.pk).password

    response = admin_client_.post(
        f"/admin/accounts/user/{lawyer.pk}/change/",
        {"email": lawyer.email, "full_name": "Laura Left", "role": "lawyer"},
    )

    assert response.status_code == 302
    [event] = _events("admin.change", "accounts.user")
    assert event.detail["fields"] == "full_name,is_active"
    assert event.detail["before.full_name"] == "Laura Lawyer"
    assert event.detail["after.full_name"] == "Laura Left"
    assert (event.detail["before.is_active"], event.detail["after.is_active"]) == (True, False)
    recorded = _everything_recorded()
    assert stored_hash not in recorded and stored_hash.split("$")[-1] not in recorded


def test_user_added_in_the_admin_records_values_but_only_that_a_password_is_set(
    admin_client_: Client,
) -> None:
    response = admin_client_.post(
        "/admin/accounts/user/add/",
        {
            "email": "new.lawyer@firm.test",
            "full_name": "Nia New",
            "role": "lawyer",
            "password": "correct horse battery staple",
        },
    )

    assert response.status_code == 302
    [event] = _events("admin.add", "accounts.user")
    assert event.detail["after.email"] == "new.lawyer@firm.test"
    assert event.detail["after.role"] == "lawyer"
    assert event.detail["after.password"] == "(set)"
    stored_hash = User.objects.get(email="new.lawyer@firm.test").password
    recorded = _everything_recorded()
    assert stored_hash not in recorded
    assert "correct horse battery staple" not in recorded


def test_token_revoke_action_records_the_revocation_never_the_digest(
    admin_client_: Client, lawyer: User
) -> None:
    issued = account_services.token_create(user=lawyer, name="agent")

    response = admin_client_.post(
        "/admin/accounts/apitoken/",
        {"action": "revoke", "_selected_action": [issued.token.pk]},
    )

    assert response.status_code == 302
    [event] = _events("admin.change", "accounts.apitoken")
    assert event.detail["fields"] == "revoked_at"
    assert event.detail["before.revoked_at"] is None
    assert event.detail["after.revoked_at"] == ApiToken.objects.get().revoked_at.isoformat()  # type: ignore[union-attr]
    recorded = _everything_recorded()
    assert issued.token.digest not in recorded and issued.secret not in recorded


# --- What a value may say -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("api_key", "sk-1", "(set)"),
        ("api_key", "", "(empty)"),
        ("password", "argon2$x", "(set)"),
        ("digest", "ab" * 32, "(set)"),
        ("base_url", "https://u:p@h.lan:1/x?token=1#f", "https://h.lan:1/x"),
        ("name", "x" * 501, "x" * 500),
        ("name", "x" * 500, "x" * 500),
        ("name", "x" * 499, "x" * 499),
        ("slots", 4, 4),
        ("enabled", False, False),
        ("board", None, None),
        ("proposed_boards", [[0, 1]], "[[0, 1]]"),
    ],
)
def test_shown_value_masks_secrets_and_bounds_text(
    field: str, value: object, shown: object
) -> None:
    assert shown_value(field, value) == shown


# --- Cases: audited on the case, so only its members see the event ------------------------


def test_case_changed_in_the_admin_is_audited_on_the_case(
    admin_client_: Client, admin_user: User, case: Case
) -> None:
    MembershipFactory(case=case, user=admin_user)
    data = {
        "title": case.title,
        "number": case.number,
        "court": case.court,
        "client": case.client,
        "status": "stayed",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }

    response = admin_client_.post(f"/admin/cases/case/{case.pk}/change/", data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    [event] = _events("admin.change", "cases.case")
    assert event.case_id == case.pk
    assert (event.detail["before.status"], event.detail["after.status"]) == ("open", "stayed")
    other_admin = UserFactory(
        email="other.admin@firm.test", role=User.Role.ADMIN, is_staff=True, is_superuser=True
    )
    log = session_client(other_admin).get("/admin/accounts/auditevent/").content.decode()
    assert case.title not in log and "admin.change" not in log


# --- Permission groups, and every admin that can write ------------------------------------


def test_group_added_changed_and_deleted_in_the_admin_is_audited_with_its_permissions(
    admin_client_: Client, admin_user: User
) -> None:
    add_case, view_case = (Permission.objects.get(codename=c) for c in ("add_case", "view_case"))

    added = admin_client_.post(
        "/admin/auth/group/add/", {"name": "Paralegals", "permissions": [view_case.pk]}
    )
    assert added.status_code == 302
    group = Group.objects.get(name="Paralegals")
    changed = admin_client_.post(
        f"/admin/auth/group/{group.pk}/change/",
        {"name": "Paralegals", "permissions": [view_case.pk, add_case.pk]},
    )
    assert changed.status_code == 302
    deleted = admin_client_.post(f"/admin/auth/group/{group.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302

    [add] = _events("admin.add", "auth.group")
    [change] = _events("admin.change", "auth.group")
    [delete] = _events("admin.delete", "auth.group")
    assert add.actor == change.actor == delete.actor == admin_user
    assert add.detail["after.name"] == "Paralegals"
    assert json.loads(add.detail["after.permissions"]) == [str(view_case)]
    assert change.detail["fields"] == "permissions"
    assert json.loads(change.detail["before.permissions"]) == [str(view_case)]
    assert json.loads(change.detail["after.permissions"]) == sorted([str(view_case), str(add_case)])
    assert delete.detail["before.name"] == "Paralegals"
    assert not Group.objects.exists()


def test_every_admin_that_can_write_rows_is_audited(admin_user: User) -> None:
    """A model registered in the admin later (or by a library) fails here unless its admin
    is an AuditedAdmin, or lets nobody add, change or delete its rows."""
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    unaudited = [
        model._meta.label
        for model, model_admin in admin.site._registry.items()
        if not isinstance(model_admin, AuditedAdmin)
        and (
            model_admin.has_add_permission(request)
            or model_admin.has_change_permission(request)
            or model_admin.has_delete_permission(request)
        )
    ]

    assert unaudited == []
    assert isinstance(admin.site._registry[Group], AuditedAdmin)
