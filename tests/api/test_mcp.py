"""The MCP server at /mcp (issue 22 req 3): the agent API's workflow as tools, driven here with
the SDK's own client over real HTTP (the product's ASGI application served by uvicorn in a
thread), a real Procrastinate worker and fake model backends: a whole matter from upload to an
approved, exported motion, and the refusals (no token, another case, oversized or malformed
arguments) as the REST API answers them."""

import asyncio
import base64
import contextlib
import io
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import httpx2
import pymupdf
import pytest
from django.db import OperationalError
from django.test import Client
from mcp.client import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.accounts import services as account_services
from apps.accounts.models import AuditEvent, User
from apps.api import mcp_core
from apps.cases.models import Case
from apps.documents import services as document_services
from apps.documents.models import Document
from apps.drafting.models import DraftVersion, Run
from tests.drafting import run_fixtures as rf
from tests.harness.sse import served_asgi, token_for

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

RECORD = [
    "Lease agreement between Acme Ltd and Widget LLC.",
    "The lease began on 3 March 2024 at a monthly rent of $1,250.00.",
]


def _pdf(lines: list[str]) -> bytes:
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        for n, line in enumerate(lines):
            page.insert_text((72, 72 + 18 * n), line)
        data: bytes = pdf.tobytes()
    return data


def _agent(
    base: str, secret: str, script: Callable[[McpClient], Awaitable[Any]], mode: str = "auto"
) -> Any:
    """Run `script` with an SDK client connected to `base`/mcp with the bearer token; `mode`
    "legacy" speaks the initialize handshake of the 2025 protocol versions, as most clients
    (Claude Code among them) do today."""

    async def main() -> Any:
        async with _connected(base, secret, mode) as client:
            return await script(client)

    return asyncio.run(main())


@contextlib.asynccontextmanager
async def _connected(base: str, secret: str, mode: str = "auto") -> AsyncIterator[McpClient]:
    headers = {"Authorization": f"Bearer {secret}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        McpClient(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


async def _ok(client: McpClient, tool: str, arguments: dict[str, Any]) -> Any:
    """The tool's structured answer (a list comes as `result`); fails on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content)
    assert result.structured_content is not None, tool
    content = result.structured_content
    return content["result"] if set(content) == {"result"} else content


async def _refused(client: McpClient, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, (tool, result.structured_content)
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _error(text: str) -> dict[str, Any]:
    """The API's error JSON at the end of a tool error's text."""
    body: dict[str, Any] = json.loads(text[text.index("{") :])
    return body


async def _until(
    client: McpClient, tool: str, arguments: dict[str, Any], done: Callable[[Any], bool]
) -> Any:
    for _ in range(240):
        answer = await _ok(client, tool, arguments)
        if done(answer):
            return answer
        await asyncio.sleep(0.25)
    raise AssertionError(f"{tool} never answered what was awaited: {answer}")


async def _run_until_waiting(client: McpClient, case_id: int, run_id: int) -> dict[str, Any]:
    """Follow the run's events with long polls until it stops by itself."""
    after, kinds = 0, []
    for _ in range(60):
        page = await _ok(
            client, "run_events", {"case_id": case_id, "run_id": run_id, "after": after, "wait": 10}
        )
        kinds += [event["kind"] for event in page["items"]]
        if page["items"]:
            after = page["items"][-1]["seq"]
        run: dict[str, Any] = await _ok(client, "run_get", {"case_id": case_id, "run_id": run_id})
        if run["status"] in {"waiting_for_approval", "failed", "cancelled", "stopped_by_gate"}:
            assert run["last_event"] >= after and kinds, (run, kinds)
            return run
    raise AssertionError(f"the run did not finish: {kinds}")


async def _verified(client: McpClient, where: dict[str, Any]) -> dict[str, Any]:
    """The version's findings once a verification (queued now) is done."""
    await _ok(client, "version_verify", where)
    findings: dict[str, Any] = await _until(
        client,
        "findings_list",
        where,
        lambda f: (
            f["verification"] is not None and f["verification"]["status"] in {"done", "failed"}
        ),
    )
    assert findings["verification"]["status"] == "done", findings["verification"]
    return findings


@pytest.mark.slow
def test_a_whole_matter_through_the_mcp_server(lawyer: User, staff: User, case: Case) -> None:
    secret, _ = token_for(lawyer)
    staff_secret, _ = token_for(staff)
    pdf = _pdf(RECORD)
    served: dict[str, str] = {}

    async def matter(client: McpClient) -> dict[str, Any]:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {
            "cases_list", "documents_upload", "case_events", "search", "bates_lookup",
            "packet_create", "packet_items_add", "packet_freeze", "run_start", "run_events",
            "run_cancel", "run_reject", "findings_list", "finding_override", "version_approve",
            "version_export", "cluster_status",
        } <= names  # fmt: skip
        cases = await _ok(client, "cases_list", {})
        assert [c["id"] for c in cases] == [case.pk]
        c = case.pk

        upload = await _ok(
            client,
            "documents_upload",
            {
                "case_id": c,
                "filename": "record.pdf",
                "content_base64": base64.b64encode(pdf).decode(),
                "origin": "client",
            },
        )
        assert upload["created"] == 1, upload
        document_id = upload["results"][0]["document"]["id"]
        # Ingest: the case's feed tells of it (long poll), the document says ready.
        events = await _ok(client, "case_events", {"case_id": c, "after": 0, "wait": 30})
        assert events["items"] and events["items"][0]["kind"] == "documents.progress"
        await _until(
            client,
            "document_get",
            {"case_id": c, "document_id": document_id},
            lambda d: d["status"] == "ready" and d["provenance"] != "pending",
        )

        found = await _ok(client, "search", {"case_id": c, "filters": {"q": "monthly rent"}})
        assert found["items"][0]["document_id"] == document_id and found["count"] == 1

        production = await _ok(
            client,
            "production_create",
            {
                "case_id": c,
                "body": {"volume": "VOL001", "prefix": "ACME", "document_ids": [document_id]},
            },
        )
        await _until(
            client,
            "production_get",
            {"case_id": c, "production_id": production["id"]},
            lambda p: p["status"] == "ready",
        )
        (hit,) = await _ok(client, "bates_lookup", {"case_id": c, "reference": "ACME000001"})
        assert hit["document_id"] == document_id and hit["page_number"] == 1

        packet = await _ok(
            client, "packet_create", {"case_id": c, "body": {"title": "Lease record"}}
        )
        items = await _ok(
            client,
            "packet_items_add",
            {
                "case_id": c,
                "packet_id": packet["id"],
                "body": {"items": [{"document_id": document_id, "reason": "The lease itself."}]},
            },
        )
        assert [item["document_id"] for item in items] == [document_id]
        frozen = await _ok(client, "packet_freeze", {"case_id": c, "packet_id": packet["id"]})
        assert frozen["frozen_at"] is not None

        motion = {
            "kind": "motion",
            "packet_id": packet["id"],
            "instructions": "Draft a motion on the lease.",
        }
        run = await _ok(client, "run_start", {"case_id": c, "body": motion})
        assert run["status"] == "queued" and run["stages"]
        run = await _run_until_waiting(client, c, run["id"])
        assert run["status"] == "waiting_for_approval", run["error"]

        # A second run is rejected once it waits; a third is cancelled at once.
        second = await _ok(
            client, "run_start", {"case_id": c, "body": motion, "idempotency_key": "second"}
        )
        second = await _run_until_waiting(client, c, second["id"])
        reason = "It argues the wrong statute of limitations."
        rejected = await _ok(
            client,
            "run_reject",
            {"case_id": c, "run_id": second["id"], "body": {"reason": reason}},
        )
        assert rejected["status"] == "rejected" and rejected["rejection_reason"] == reason
        third = await _ok(
            client, "run_start", {"case_id": c, "body": motion, "idempotency_key": "third"}
        )
        cancelled = await _ok(client, "run_cancel", {"case_id": c, "run_id": third["id"]})
        assert cancelled["status"] == "cancelled"

        # The first run's draft: its last version verified, approved (which closes the run).
        draft = await _ok(client, "draft_get", {"case_id": c, "draft_id": run["draft_id"]})
        number = max(version["number"] for version in draft["versions"])
        where = {"case_id": c, "draft_id": draft["id"], "number": number}
        text = await _ok(client, "version_get", where)
        assert "3 March 2024" in text["text"]
        findings = await _verified(client, where)
        assert findings["blocking"] == 0, findings
        approved = await _ok(client, "version_approve", where)
        assert approved["approved_at"] is not None
        closed = await _ok(client, "run_get", {"case_id": c, "run_id": run["id"]})
        assert closed["status"] == "succeeded"

        # The lawyer's own draft claims a rent the record does not show: export and approval
        # wait until the lawyer lets that finding stand with a reason.
        mine = await _ok(
            client,
            "draft_create",
            {
                "case_id": c,
                "body": {
                    "title": "Motion on the lease",
                    "kind": "motion",
                    "packet_id": packet["id"],
                    "text": "The lease began on 3 March 2024. The rent was $9,999.00.",
                },
            },
        )
        where = {"case_id": c, "draft_id": mine["id"], "number": 1}
        findings = await _verified(client, where)
        blocking = [f for f in findings["findings"] if f["blocks"]]
        assert [f["text"] for f in blocking] == ["$9,999.00"], findings
        export = {**where, "body": {"format": "pdf"}}
        refused = _error(await _refused(client, "version_export", export))
        assert refused["code"] == "unsupported_findings" and refused["status"] == 409
        # Staff of the case may not let a finding stand: the service's rule, over MCP too.
        override = {**where, "finding_id": blocking[0]["id"], "body": {"reason": "Looks fine."}}
        async with _connected(served["base"], staff_secret) as staff_client:
            by_staff = _error(await _refused(staff_client, "finding_override", override))
        assert by_staff["code"] == "lawyer_required" and by_staff["status"] == 403
        overridden = await _ok(
            client,
            "finding_override",
            {**where, "finding_id": blocking[0]["id"], "body": {"reason": "Checked by hand."}},
        )
        assert overridden["override"]["reason"] == "Checked by hand." and not overridden["blocks"]
        await _ok(client, "version_approve", where)
        exported = await _ok(client, "version_export", export)
        assert base64.b64decode(exported["content_base64"]).startswith(b"%PDF")
        assert exported["document_id"] is not None

        status = await _ok(client, "cluster_status", {})
        assert status["backends"]
        return {"document": document_id, "run": run["id"], "second": second["id"]}

    with rf.site_running(), rf.ThreadWorker(), served_asgi() as base:
        served["base"] = base
        done = _agent(base, secret, matter)

    # What the tools did is in the database and the audit as the API's work is, from "mcp".
    assert Document.objects.get(pk=done["document"]).uploaded_by == lawyer
    upload = AuditEvent.objects.get(action="document.upload")
    assert upload.actor == lawyer and upload.via == "mcp"
    assert Run.objects.get(pk=done["second"]).status == Run.Status.REJECTED
    assert DraftVersion.objects.filter(approved_at__isnull=False, approved_by=lawyer).count() == 2
    assert AuditEvent.objects.filter(action="finding.override", actor=lawyer, via="mcp").exists()


def test_a_client_of_the_handshake_protocol_is_served_too(lawyer: User, case: Case) -> None:
    secret, _ = token_for(lawyer)

    async def script(client: McpClient) -> Any:
        assert (client.session.protocol_version or "").startswith("2025-")
        return await _ok(client, "cases_list", {})

    with served_asgi() as base:
        cases = _agent(base, secret, script, mode="legacy")
    assert [c["id"] for c in cases] == [case.pk]


def test_without_a_valid_token_the_server_answers_401(lawyer: User, case: Case) -> None:
    with served_asgi() as base:
        hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        bare = httpx.post(f"{base}/mcp", json=hello)
        bad = httpx.post(f"{base}/mcp", json=hello, headers={"Authorization": "Bearer lw_no_no"})
        with pytest.raises(BaseException) as raised:
            _agent(base, "lw_not_a_token", lambda client: client.list_tools())
    # The SDK's client gets the 401 too, and says the server refused.
    (refusal,) = _leaves(raised.value)
    assert isinstance(refusal, MCPError) and "error response" in str(refusal)
    for response in (bare, bad):
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["code"] == "unauthenticated"


@pytest.mark.slow
def test_a_revoked_token_bad_tokens_and_other_hosts_are_refused_as_the_api_does(
    lawyer: User, case: Case, settings: SettingsWrapper
) -> None:
    settings.LEXWEB_API_BAD_TOKEN_ATTEMPTS = 2
    secret, token_id = token_for(lawyer)
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with served_asgi() as base:
        cases = _agent(base, secret, lambda client: _ok(client, "cases_list", {}))
        assert [c["id"] for c in cases] == [case.pk]
        account_services.token_revoke(user=lawyer, token_id=token_id)
        revoked = httpx.post(
            f"{base}/mcp", json=hello, headers={"Authorization": f"Bearer {secret}"}
        )
        # The budget of bad tokens (2 here) is the REST API's: spent by the revoked one above
        # and one more, the next is 429 with Retry-After, on /mcp and on the REST API alike.
        bad = httpx.post(f"{base}/mcp", json=hello, headers={"Authorization": "Bearer lw_x_y"})
        throttled = httpx.post(
            f"{base}/mcp", json=hello, headers={"Authorization": "Bearer lw_x_y"}
        )
        rest = httpx.get(f"{base}/api/v1/cases", headers={"Authorization": "Bearer lw_x_y"})
        other_host = httpx.post(
            f"{base}/mcp",
            json=hello,
            headers={"Authorization": f"Bearer {token_for(lawyer)[0]}", "Host": "evil.example"},
        )
    assert revoked.status_code == 401 and bad.status_code == 401
    assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) > 0
    assert throttled.json()["code"] == "throttled" == rest.json()["code"]
    assert rest.status_code == 429
    assert other_host.status_code == 400


@pytest.mark.slow
def test_another_cases_member_gets_the_apis_not_found(
    lawyer: User, case: Case, outsider: User, other_case: Case, outsider_api: Client
) -> None:
    secret, _ = token_for(outsider)
    rest = outsider_api.post(
        f"/api/v1/cases/{case.pk}/packets", {"title": "Mine"}, content_type="application/json"
    )
    assert rest.status_code == 404

    async def script(client: McpClient) -> list[str]:
        cases = await _ok(client, "cases_list", {})
        assert [c["id"] for c in cases] == [other_case.pk]
        return [
            await _refused(
                client, "packet_create", {"case_id": case.pk, "body": {"title": "Mine"}}
            ),
            await _refused(client, "search", {"case_id": case.pk, "filters": {"q": "lease"}}),
            await _refused(client, "case_events", {"case_id": case.pk}),
        ]

    with served_asgi() as base:
        texts = _agent(base, secret, script)
    for text in texts:
        assert _error(text) == {**rest.json(), "status": 404}


def test_an_oversized_or_broken_upload_is_refused_clearly(
    lawyer: User, case: Case, settings: SettingsWrapper
) -> None:
    settings.LEXWEB_MAX_UPLOAD_BYTES = 1024
    secret, _ = token_for(lawyer)
    upload = {"case_id": case.pk, "filename": "big.txt", "origin": "client"}

    async def script(client: McpClient) -> list[str]:
        return [
            await _refused(
                client,
                "documents_upload",
                {**upload, "content_base64": base64.b64encode(b"x" * 1025).decode()},
            ),
            await _refused(client, "documents_upload", {**upload, "content_base64": "not base64!"}),
        ]

    with served_asgi() as base:
        too_big, broken = _agent(base, secret, script)
    assert _error(too_big) == {
        "detail": "The file is 1,025 bytes; the limit is 1,024 bytes.",
        "code": "too_large",
        "status": 413,
    }
    assert _error(broken)["code"] == "invalid" and "base64" in _error(broken)["detail"]
    assert not Document.objects.exists()


def test_malformed_arguments_are_refused_naming_the_field(lawyer: User, case: Case) -> None:
    secret, _ = token_for(lawyer)

    async def script(client: McpClient) -> list[str]:
        return [
            await _refused(
                client, "packet_create", {"case_id": str(case.pk), "body": {"title": "A"}}
            ),
            await _refused(
                client, "packet_create", {"case_id": case.pk, "body": {"title": "A", "x": 1}}
            ),
            await _refused(client, "packet_create", {"case_id": case.pk}),
            await _refused(client, "run_events", {"case_id": case.pk, "run_id": 1, "wait": 61}),
            await _refused(client, "bates_lookup", {"case_id": case.pk, "reference": "A\x00"}),
            await _refused(client, "no_such_tool", {}),
        ]

    with served_asgi() as base:
        as_string, unknown_field, missing, long_wait, nul, no_tool = _agent(base, secret, script)
    # As the REST API answers a request that fails its schema: 422 `invalid`, each field named.
    for text, loc, msg in (
        (as_string, ["case_id"], "Input should be a valid integer"),
        (unknown_field, ["body", "x"], "Extra inputs are not permitted"),
        (missing, ["body"], "Field required"),
        (long_wait, ["wait"], "Input should be less than or equal to 60"),
        (nul, ["reference"], "Value error, must not contain NUL (\\x00) characters"),
    ):
        error = _error(text)
        assert error["code"] == "invalid" and error["status"] == 422
        assert error["errors"] == [{"loc": loc, "msg": msg}]
        assert error["detail"] == f"Invalid request: {'.'.join(loc)}: {msg}"
    assert "no_such_tool" in no_tool
    assert not case.packets.exists()


def test_a_database_that_does_not_answer_and_the_unexpected_answer_as_the_api_does() -> None:
    try:
        try:
            raise OperationalError("the server closed the connection")
        except OperationalError as gone:
            raise RuntimeError("while reading the case") from gone
    except RuntimeError as exc:
        unavailable = json.loads(str(mcp_core.translated(exc)))
    assert unavailable == {
        "detail": "The database is not answering (it may be restarting). Try again in 5 s.",
        "code": "database_unavailable",
        "status": 503,
    }
    broken = json.loads(str(mcp_core.translated(ValueError("a bug"))))
    assert broken["code"] == "internal_error" and broken["status"] == 500
    assert "a bug" not in broken["detail"]


@pytest.mark.slow
def test_the_door_out_answers_over_mcp_as_over_the_api(lawyer: User, case: Case) -> None:
    # Issue 25 req 1: production_check says why; production_create refuses work product until
    # a lawyer includes it with a reason.
    secret, _ = token_for(lawyer)
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="notes.pdf",
        source=io.BytesIO(_pdf(["Partner notes on trial strategy."])),
        origin="work_product",
    )
    assert outcome.document is not None
    document_services.document_extract_text(document_id=outcome.document.pk)
    notes = outcome.document.pk
    body = {"volume": "VOL001", "prefix": "ACME", "document_ids": [notes]}
    reason = "Ordered produced by the court on 3 March."

    async def script(client: McpClient) -> tuple[Any, str, Any]:
        check = await _ok(client, "production_check", {"case_id": case.pk, "document_ids": [notes]})
        refused = await _refused(client, "production_create", {"case_id": case.pk, "body": body})
        include = {**body, "include": [{"document_id": notes, "reason": reason}]}
        made = await _ok(client, "production_create", {"case_id": case.pk, "body": include})
        return check, refused, made

    with served_asgi() as base:
        check, refused, made = _agent(base, secret, script)

    assert check == [
        {
            "document_id": notes,
            "filename": "notes.pdf",
            "producible": False,
            "refused": "",
            "held_back": "it is firm work product",
            "lawyer_may_include": True,
        }
    ]
    assert _error(refused)["code"] == "production_refused" and _error(refused)["status"] == 422
    assert made["items"][0]["inclusion_reason"] == reason
    assert AuditEvent.objects.get(action="production.document_included").via == "mcp"
