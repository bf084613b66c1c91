"""Issue 22 req 5: `Idempotency-Key` on every POST, PATCH and DELETE of the API
(apps/api/idempotency.py): the same key and request answer the first response without doing it
again, another request with the key is 409, keys are per token, malformed keys are 400, a key in
use is 409 while its request runs, answers are kept 24 hours, and every state-changing
operation of the schema honours the header."""

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.utils import timezone

from apps.accounts import services as account_services
from apps.accounts.models import ApiToken, AuditEvent, User
from apps.api import idempotency
from apps.api.api import api
from apps.api.models import IdempotentRequest
from apps.cases.models import Case
from apps.documents.models import Document, Production
from apps.drafting.models import Draft
from apps.evidence.models import Packet, PacketItem
from apps.operations import tasks as operations_tasks
from apps.verification.models import Override
from tests.conftest import session_client, token_client
from tests.drafting.makers import draft_of, packet_of, read_pdf, verified

pytestmark = pytest.mark.django_db

JSON = "application/json"
REASON = "Checked by hand: the signed lease (not in the packet) says so."


def _key(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def _packets(case: Case) -> str:
    return f"/api/v1/cases/{case.pk}/packets"


def _create_packet(client: Client, case: Case, key: str, title: str = "Exhibits") -> Any:
    return client.post(
        _packets(case), {"title": title, "purpose": "Motion"}, content_type=JSON, headers=_key(key)
    )


def _replayed(first: Any, again: Any) -> bool:
    return (
        again.status_code == first.status_code
        and again.content == first.content
        and again.headers["Content-Type"] == first.headers["Content-Type"]
        and again.headers.get("Idempotent-Replayed") == "true"
        and "Idempotent-Replayed" not in first.headers
    )


# --- Replay: nothing is done twice --------------------------------------------------------------


def test_the_same_key_and_body_answer_the_first_packet_without_creating_a_second(
    lawyer_api: Client, case: Case, lawyer: User
) -> None:
    first = _create_packet(lawyer_api, case, "packet-1")
    again = _create_packet(lawyer_api, case, "packet-1")

    assert first.status_code == 201, first.content
    assert _replayed(first, again)
    assert Packet.objects.filter(case=case).count() == 1
    # The replay is not a new action: one audit row.
    assert AuditEvent.objects.filter(action="packet.create", actor=lawyer).count() == 1


def test_an_upload_is_stored_once_and_another_file_under_the_key_is_409(
    lawyer_api: Client, case: Case
) -> None:
    url = f"/api/v1/cases/{case.pk}/documents"

    def upload(data: bytes, name: str = "note.txt") -> Any:
        files = [SimpleUploadedFile(name, data, content_type="text/plain")]
        return lawyer_api.post(url, {"files": files, "origin": "client"}, headers=_key("up-1"))

    first = upload(b"The lease began on 3 March 2024.\n")
    again = upload(b"The lease began on 3 March 2024.\n")
    other_bytes = upload(b"The lease began on 4 March 2024.\n")
    other_name = upload(b"The lease began on 3 March 2024.\n", name="other.txt")

    assert first.status_code == 201, first.content
    assert _replayed(first, again)
    assert other_bytes.status_code == 409 and other_bytes.json()["code"] == "idempotency_key_reused"
    assert other_name.status_code == 409 and other_name.json()["code"] == "idempotency_key_reused"
    assert Document.objects.filter(case=case).count() == 1
    assert AuditEvent.objects.filter(action="document.upload").count() == 1


def test_items_add_freeze_and_new_version_each_run_once(
    lawyer_api: Client, case: Case, lawyer: User
) -> None:
    document = read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    packet = _create_packet(lawyer_api, case, "p").json()
    base = f"{_packets(case)}/{packet['id']}"
    items = {"items": [{"document_id": document.pk, "reason": "The lease"}]}

    added = [
        lawyer_api.post(f"{base}/items", items, content_type=JSON, headers=_key("items-1"))
        for _ in range(2)
    ]
    frozen = [lawyer_api.post(f"{base}/freeze", headers=_key("freeze-1")) for _ in range(2)]
    versions = [lawyer_api.post(f"{base}/versions", headers=_key("version-1")) for _ in range(2)]

    assert added[0].status_code == 201, added[0].content
    assert frozen[0].status_code == 200, frozen[0].content
    assert versions[0].status_code == 201, versions[0].content
    assert _replayed(*added) and _replayed(*frozen) and _replayed(*versions)
    assert PacketItem.objects.filter(packet_id=packet["id"]).count() == 1
    assert Packet.objects.filter(case=case).count() == 2
    # Without the key the second freeze is refused as usual: the replay did not run it.
    assert lawyer_api.post(f"{base}/freeze").status_code == 409


def test_a_production_is_reserved_once(lawyer_api: Client, case: Case, lawyer: User) -> None:
    document = read_pdf(case=case, user=lawyer, lines=["Page one of the lease."])
    body = {"volume": "VOL001", "prefix": "ACME", "document_ids": [document.pk]}
    url = f"/api/v1/cases/{case.pk}/productions"

    first = lawyer_api.post(url, body, content_type=JSON, headers=_key("prod-1"))
    again = lawyer_api.post(url, body, content_type=JSON, headers=_key("prod-1"))

    assert first.status_code == 201, first.content
    assert _replayed(first, again)
    assert Production.objects.filter(case=case).count() == 1


@pytest.fixture
def draft(lawyer: User, case: Case) -> Draft:
    document = read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    return draft_of(case=case, user=lawyer, packet=packet, text="Dates: 1 2 3 4 5 6.")


def test_override_and_approve_are_replayed_not_refused_the_second_time(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    _version, (unsupported,) = verified(draft=draft, user=lawyer, statuses=["unsupported"])
    base = f"/api/v1/cases/{draft.case_id}/drafts/{draft.pk}/versions/1"

    overrides = [
        lawyer_api.post(
            f"{base}/findings/{unsupported.pk}/override",
            {"reason": REASON},
            content_type=JSON,
            headers=_key("override-1"),
        )
        for _ in range(2)
    ]
    approvals = [lawyer_api.post(f"{base}/approve", headers=_key("approve-1")) for _ in range(2)]

    assert overrides[0].status_code == 200, overrides[0].content
    assert approvals[0].status_code == 200, approvals[0].content
    # Without a key the second of each is 409 (already overridden, already approved).
    assert _replayed(*overrides) and _replayed(*approvals)
    assert Override.objects.count() == 1
    assert AuditEvent.objects.filter(action="finding.override").count() == 1
    assert AuditEvent.objects.filter(action="draft.approve").count() == 1


def test_verify_and_export_are_replayed_with_the_exports_own_headers(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    base = f"/api/v1/cases/{draft.case_id}/drafts/{draft.pk}/versions/1"
    verifications = [lawyer_api.post(f"{base}/verify", headers=_key("verify-1")) for _ in range(2)]
    verified(draft=draft, user=lawyer, statuses=["supported"])

    exports = [
        lawyer_api.post(
            f"{base}/export", {"format": "pdf"}, content_type=JSON, headers=_key("export-1")
        )
        for _ in range(2)
    ]

    assert verifications[0].status_code == 202, verifications[0].content
    assert _replayed(*verifications)
    assert exports[0].status_code == 200, exports[0].content
    assert _replayed(*exports)
    for header in ("Content-Disposition", "X-Lexweb-Artifact", "X-Lexweb-Document"):
        assert exports[1].headers[header] == exports[0].headers[header]
    assert AuditEvent.objects.filter(action="draft.export").count() == 1


def test_a_new_tokens_secret_is_not_kept_and_the_replay_creates_no_second_token(
    lawyer: User,
) -> None:
    client = session_client(lawyer)

    def create() -> Any:
        return client.post(
            "/api/v1/tokens", {"name": "agent"}, content_type=JSON, headers=_key("token-1")
        )

    first = create()
    again = create()

    assert first.status_code == 201, first.content
    secret = first.json()["secret"]
    assert again.status_code == 409 and again.json()["code"] == "idempotency_response_not_kept"
    assert "201" in again.json()["detail"] and "secret" in again.json()["detail"]
    assert ApiToken.objects.filter(user=lawyer, name="agent").count() == 1
    row = IdempotentRequest.objects.get(key="token-1")
    assert row.body is None and row.status == 201 and row.caller == f"user:{lawyer.pk}"
    assert secret not in str(IdempotentRequest.objects.values_list().get(pk=row.pk))


def test_a_4xx_answer_is_kept_and_replayed(lawyer_api: Client, case: Case) -> None:
    url = f"{_packets(case)}/999999/freeze"

    first = lawyer_api.post(url, headers=_key("missing-1"))
    again = lawyer_api.post(url, headers=_key("missing-1"))

    assert first.status_code == 404
    assert _replayed(first, again)


def test_an_answer_over_the_bound_is_remembered_without_its_body(
    lawyer_api: Client, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(idempotency, "MAX_STORED_BYTES", 10)

    first = _create_packet(lawyer_api, case, "big-1")
    again = _create_packet(lawyer_api, case, "big-1")

    assert first.status_code == 201
    assert again.status_code == 409 and again.json()["code"] == "idempotency_response_not_kept"
    assert "201" in again.json()["detail"] and "10 bytes" in again.json()["detail"]
    assert Packet.objects.filter(case=case).count() == 1


def test_server_errors_and_throttles_are_not_stored(lawyer: User) -> None:
    # The claim's store step, with answers no endpoint gives on demand.
    claim = idempotency._Claim(caller="user:1", key="k", method="POST", path="/x", body_sha256="0")
    for status in (500, 503, 429, 408):
        claim.store(HttpRequest(), HttpResponse(b"{}", status=status))
    claim.store(HttpRequest(), HttpResponse(b"{}", status=201))

    assert list(IdempotentRequest.objects.values_list("status", flat=True)) == [201]


# --- 409: another request under the key; keys are per caller ------------------------------------


def test_the_key_with_another_body_or_path_is_409_and_nothing_is_created(
    lawyer_api: Client, case: Case, other_case: Case
) -> None:
    first = _create_packet(lawyer_api, case, "k-1")
    other_body = _create_packet(lawyer_api, case, "k-1", title="Another title")
    other_path = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "V", "prefix": "P", "document_ids": [1]},
        content_type=JSON,
        headers=_key("k-1"),
    )

    assert first.status_code == 201
    for refused in (other_body, other_path):
        assert refused.status_code == 409
        assert refused.json()["code"] == "idempotency_key_reused"
        assert "Idempotent-Replayed" not in refused.headers
    assert Packet.objects.filter(case=case).count() == 1


def _token_client(user: User, name: str) -> Client:
    secret = account_services.token_create(user=user, name=name).secret
    return Client(headers={"authorization": f"Bearer {secret}"})


def test_keys_are_per_token_and_per_session(lawyer: User, case: Case) -> None:
    one, two = (_token_client(lawyer, name) for name in ("one", "two"))
    session = session_client(lawyer)

    answers = [_create_packet(client, case, "same-key") for client in (one, two, session)]

    assert [a.status_code for a in answers] == [201, 201, 201]
    assert len({a.json()["id"] for a in answers}) == 3
    assert not any("Idempotent-Replayed" in a.headers for a in answers)
    callers = set(IdempotentRequest.objects.values_list("caller", flat=True))
    assert len(callers) == 3 and f"user:{lawyer.pk}" in callers


def test_a_non_members_key_stores_a_404_and_reveals_nothing(
    outsider_api: Client, case: Case
) -> None:
    first = _create_packet(outsider_api, case, "outsider-1")
    again = _create_packet(outsider_api, case, "outsider-1")

    assert first.status_code == 404 and _replayed(first, again)
    assert Packet.objects.filter(case=case).count() == 0


# --- Malformed keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["", "   ", "k" * 201, "bad\x01key", "tab\tkey", "new\nline", "ключ", "del\x7f"],
    ids=["empty", "blank", "too-long", "control", "tab", "newline", "non-ascii", "del"],
)
def test_a_malformed_key_is_400_and_nothing_is_done(
    lawyer_api: Client, case: Case, key: str
) -> None:
    response = _create_packet(lawyer_api, case, key)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_idempotency_key"
    assert "Idempotency-Key" in response.json()["detail"]
    assert Packet.objects.count() == 0 and IdempotentRequest.objects.count() == 0


def test_a_200_character_key_is_accepted(lawyer_api: Client, case: Case) -> None:
    assert _create_packet(lawyer_api, case, "k" * 200).status_code == 201


def test_reads_ignore_the_header(lawyer_api: Client, case: Case) -> None:
    response = lawyer_api.get(_packets(case), headers=_key("bad\x01key"))

    assert response.status_code == 200 and IdempotentRequest.objects.count() == 0


def test_without_a_session_or_token_it_is_401_not_stored(client: Client, case: Case) -> None:
    response = _create_packet(client, case, "anon-1")

    assert response.status_code == 401 and IdempotentRequest.objects.count() == 0


# --- In progress and concurrency -----------------------------------------------------------------


def _hold_lock(caller: str, key: str, held: threading.Event, done: threading.Event) -> None:
    """In a thread (its own database connection): hold the key's lock until `done`."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_lock(%s)", [idempotency.lock_id(caller=caller, key=key)]
            )
            held.set()
            done.wait(30)
            cursor.execute(
                "SELECT pg_advisory_unlock(%s)", [idempotency.lock_id(caller=caller, key=key)]
            )
    finally:
        connection.close()


def _lock_is_free(caller: str, key: str) -> bool:
    """From another database connection: could a request take the key's lock now?"""
    free: list[bool] = []

    def probe() -> None:
        try:
            with connection.cursor() as cursor:
                lock = idempotency.lock_id(caller=caller, key=key)
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [lock])
                (taken,) = cursor.fetchone()
                if taken:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [lock])
                free.append(taken)
        finally:
            connection.close()

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join(10)
    return free == [True]


def test_the_key_is_released_after_its_request_a_replay_and_a_refusal(
    lawyer: User, case: Case
) -> None:
    client, caller = session_client(lawyer), f"user:{lawyer.pk}"

    _create_packet(client, case, "free-1")
    assert _lock_is_free(caller, "free-1")
    _create_packet(client, case, "free-1")
    assert _lock_is_free(caller, "free-1")
    refused = _create_packet(client, case, "free-1", title="Another")
    assert refused.status_code == 409 and _lock_is_free(caller, "free-1")


def test_a_key_whose_request_is_running_is_409_in_progress_and_runs_nothing(
    lawyer: User, case: Case
) -> None:
    client = session_client(lawyer)
    held, done = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(f"user:{lawyer.pk}", "busy-1", held, done))
    holder.start()
    try:
        assert held.wait(10)
        busy = _create_packet(client, case, "busy-1")
    finally:
        done.set()
        holder.join(10)
    after = _create_packet(client, case, "busy-1")

    assert busy.status_code == 409 and busy.json()["code"] == "idempotency_key_in_progress"
    assert after.status_code == 201
    assert Packet.objects.filter(case=case).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_run_it_once(lawyer: User, case: Case) -> None:
    issued_client = token_client(lawyer)
    barrier = threading.Barrier(4)
    answers: list[Any] = []

    def send() -> None:
        try:
            barrier.wait(10)
            answers.append(_create_packet(issued_client, case, "race-1"))
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert len(answers) == 4
    ran = [a for a in answers if a.status_code == 201 and "Idempotent-Replayed" not in a.headers]
    others = [a for a in answers if a not in ran]
    assert len(ran) == 1
    for answer in others:
        assert _replayed(ran[0], answer) or (
            answer.status_code == 409 and answer.json()["code"] == "idempotency_key_in_progress"
        )
    assert Packet.objects.filter(case=case).count() == 1


# --- 24 hours ------------------------------------------------------------------------------------


def test_after_24_hours_the_key_is_forgotten_and_the_sweep_removes_it(
    lawyer_api: Client, case: Case, lawyer: User
) -> None:
    first = _create_packet(lawyer_api, case, "day-1")
    IdempotentRequest.objects.filter(key="day-1").update(
        created_at=timezone.now() - timedelta(hours=24, minutes=1)
    )
    again = _create_packet(lawyer_api, case, "day-1", title="A day later")
    kept = _create_packet(lawyer_api, case, "day-2")
    IdempotentRequest.objects.filter(key="day-2").update(
        created_at=timezone.now() - timedelta(hours=25)
    )

    assert first.status_code == 201
    assert again.status_code == 201 and "Idempotent-Replayed" not in again.headers
    assert kept.status_code == 201
    assert Packet.objects.filter(case=case).count() == 3
    assert idempotency.idempotency_expired_delete() == 1
    assert list(IdempotentRequest.objects.values_list("key", flat=True)) == ["day-1"]


def test_the_periodic_sweep_removes_expired_answers(lawyer: User) -> None:
    IdempotentRequest.objects.create(
        caller=f"user:{lawyer.pk}",
        key="old",
        method="POST",
        path="/api/v1/cases",
        body_sha256="0",
        status=201,
        created_at=timezone.now() - timedelta(days=2),
    )
    operations_tasks.files_sweep_task(timestamp=0)

    assert not IdempotentRequest.objects.exists()


# --- Every state-changing operation honours the key ----------------------------------------------


def _unsafe_operations() -> list[tuple[str, str]]:
    schema = api.get_openapi_schema()
    return [
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
        if method.upper() in idempotency.UNSAFE_METHODS
    ]


@pytest.mark.slow
def test_the_schema_names_the_header_on_every_state_changing_operation() -> None:
    schema = api.get_openapi_schema()
    operations = _unsafe_operations()

    assert len(operations) >= 25
    for method, path in operations:
        names = [p["name"] for p in schema["paths"][path][method.lower()].get("parameters", [])]
        assert "Idempotency-Key" in names, (method, path)
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method.upper() not in idempotency.UNSAFE_METHODS:
                names = [p["name"] for p in operation.get("parameters", [])]
                assert "Idempotency-Key" not in names, (method, path)


def test_every_bound_operation_that_changes_something_is_wrapped_twice() -> None:
    # Around the call (malformed keys, storing the answer) and around the endpoint itself
    # (replay, refusal, taking the key): both from api.add_decorator, for every router.
    operations = [
        operation
        for router in api._get_bound_routers()
        for path_view in router.path_operations.values()
        for operation in path_view.operations
        if set(operation.methods) & idempotency.UNSAFE_METHODS
    ]

    assert len(operations) == len(_unsafe_operations())
    for operation in operations:
        name = operation.view_func.__name__
        assert getattr(operation.run, "idempotent_guard", False), name
        assert getattr(operation.view_func, "idempotent_guard", False), name


@pytest.mark.parametrize(("method", "path"), _unsafe_operations())
def test_every_state_changing_operation_honours_the_key(
    lawyer_api: Client, method: str, path: str
) -> None:
    # A malformed key is refused by the guard before anything else: proof it wraps the call.
    concrete = "/".join("1" if part.startswith("{") else part for part in path.split("/"))
    response = lawyer_api.generic(method, concrete, headers=_key("k" * 201))

    assert response.status_code == 400, (method, path, response.content)
    assert response.json()["code"] == "invalid_idempotency_key"
