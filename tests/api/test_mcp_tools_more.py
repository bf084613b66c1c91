"""The rest of the agent's desk over MCP (issue 22 req 3; apps/api/mcp_tools_more.py): cases and
members, the review list, flag clearing, production exports, packet versions and comparison,
draft diffs, the transactions CSV, and `idempotency_key` on the tools that change something,
driven with the SDK's own client over real HTTP as tests/api/test_mcp.py does, and compared with
what the REST API answers for the same request."""

import base64
import csv
import io
import zipfile
from datetime import datetime
from typing import Any

import httpx
import pytest
from django.test import Client
from mcp.client import Client as McpClient
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.accounts import services as account_services
from apps.accounts.models import AuditEvent, User
from apps.api import mcp_tools_more
from apps.cases.models import Case, Membership
from apps.documents.list_forms import MAX_BULK_DOCUMENTS
from apps.documents.models import Document
from apps.drafting.models import Run
from apps.evidence.models import Packet
from tests.api.test_mcp import RECORD, _agent, _connected, _error, _ok, _pdf, _refused, _until
from tests.drafting import run_fixtures as rf
from tests.drafting.table_fixtures import ROWS, financial_run
from tests.evidence.test_flag_clearance import REASON, flagged
from tests.harness.sse import served_asgi, token_for

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


async def _ready(client: McpClient, case_id: int, name: str, lines: list[str]) -> int:
    """Upload a PDF of `lines` and wait until it is read; its document id."""
    upload = await _ok(
        client,
        "documents_upload",
        {
            "case_id": case_id,
            "filename": name,
            "content_base64": base64.b64encode(_pdf(lines)).decode(),
            "origin": "client",
        },
    )
    document_id: int = upload["results"][0]["document"]["id"]
    await _until(
        client,
        "document_get",
        {"case_id": case_id, "document_id": document_id},
        lambda d: d["status"] == "ready" and d["provenance"] != "pending",
    )
    return document_id


@pytest.mark.slow
def test_an_agent_opens_a_matter_staffs_it_reviews_produces_and_exports_it(
    lawyer: User, staff: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret, _ = token_for(lawyer)
    seen: dict[str, Any] = {}

    async def matter(client: McpClient) -> None:
        opened = await _ok(
            client,
            "case_create",
            {"body": {"title": "Acme v. Widget", "number": "CV-2026-0101", "client": "Acme"}},
        )
        c = seen["case"] = opened["id"]
        assert [x["id"] for x in await _ok(client, "cases_list", {})] == [c]
        added = await _ok(
            client, "member_add", {"case_id": c, "body": {"email": staff.email, "role": "staff"}}
        )
        assert added["role"] == "staff" and added["user"]["id"] == staff.pk
        members = await _ok(client, "members_list", {"case_id": c})
        assert sorted((m["user"]["id"], m["role"]) for m in members) == sorted(
            [(lawyer.pk, "lawyer"), (staff.pk, "staff")]
        )
        updated = await _ok(client, "case_update", {"case_id": c, "body": {"court": "D. Del."}})
        assert (
            updated["court"]
            == "D. Del."
            == (await _ok(client, "case_get", {"case_id": c}))["court"]
        )

        lease = await _ready(client, c, "lease.pdf", RECORD)
        wrong = await _ready(client, c, "wrong.pdf", ["A letter about another matter."])

        # The review list: tag, untag, withdraw the wrong upload, bring it back.
        tagged = await _ok(
            client, "documents_tag", {"case_id": c, "body": {"document_ids": [lease, wrong],
                                                             "name": "Lease"}}
        )  # fmt: skip
        assert tagged["added"] == 2 and tagged["tag"]["name"] == "Lease"
        assert await _ok(client, "tags_list", {"case_id": c}) == [tagged["tag"]]
        untag = {"document_ids": [wrong], "tag_id": tagged["tag"]["id"]}
        assert await _ok(client, "documents_untag", {"case_id": c, "body": untag}) == {"removed": 1}
        reason = "Uploaded to the wrong matter."
        (withdrawn,) = await _ok(
            client,
            "documents_withdraw",
            {"case_id": c, "body": {"document_ids": [wrong], "reason": reason}},
        )
        assert withdrawn["withdrawn"] and withdrawn["withdrawn_reason"] == reason
        assert [d["id"] for d in await _ok(client, "documents_list", {"case_id": c})] == [lease]
        restored = await _ok(client, "document_restore", {"case_id": c, "document_id": wrong})
        assert not restored["withdrawn"]

        # Produce the lease, then its volume and its export zip.
        production = await _ok(
            client,
            "production_create",
            {"case_id": c, "body": {"volume": "VOL001", "prefix": "ACME", "document_ids": [lease]}},
        )
        p = {"case_id": c, "production_id": production["id"]}
        await _until(client, "production_get", p, lambda x: x["status"] == "ready")
        assert [x["id"] for x in await _ok(client, "productions_list", {"case_id": c})] == [
            production["id"]
        ]
        volume = await _ok(client, "production_volume", p)
        assert volume["filename"] == "VOL001.pdf" and volume["media_type"] == "application/pdf"
        assert base64.b64decode(volume["content_base64"]).startswith(b"%PDF")
        export = await _ok(client, "production_export_create", {**p, "body": {"image_dpi": 100}})
        assert export["image_dpi"] == 100 and export["encoding"] == "utf-8"
        e = {**p, "export_id": export["id"]}
        await _until(client, "production_export_get", e, lambda x: x["status"] == "ready")
        download = await _ok(client, "production_export_download", e)
        data = base64.b64decode(download["content_base64"])
        assert download["size"] == len(data) and download["filename"] == "VOL001.zip"
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
        assert any(n.endswith(".dat") for n in names) and any(n.endswith(".opt") for n in names)
        seen["zip"], seen["zip_path"] = data, download["download_path"]
        # Over the inline limit: no bytes, only where the REST API serves the same file.
        monkeypatch.setattr(mcp_tools_more, "INLINE_BYTES", 10)
        large = await _ok(client, "production_export_download", e)
        assert large["content_base64"] is None and large["size"] == len(data)
        assert large["download_path"] == seen["zip_path"]
        monkeypatch.undo()

        # Packet versions: v1 frozen, v2 without the wrong letter, compared.
        packet = await _ok(client, "packet_create", {"case_id": c, "body": {"title": "Lease"}})
        items = await _ok(
            client,
            "packet_items_add",
            {"case_id": c, "packet_id": packet["id"], "body": {"items": [
                {"document_id": lease, "reason": "The lease itself."},
                {"document_id": wrong, "reason": "Context."},
            ]}},
        )  # fmt: skip
        await _ok(client, "packet_freeze", {"case_id": c, "packet_id": packet["id"]})
        second = await _ok(
            client, "packet_version_create", {"case_id": c, "packet_id": packet["id"]}
        )
        assert second["version"] == 2 and second["frozen_at"] is None
        dropped = next(i for i in second["items"] if i["document_id"] == wrong)
        after = await _ok(
            client,
            "packet_item_remove",
            {"case_id": c, "packet_id": second["id"], "item_id": dropped["id"], "reason": "No."},
        )
        assert [i["document_id"] for i in after["items"]] == [lease]
        versions = await _ok(client, "packet_versions", {"case_id": c, "packet_id": second["id"]})
        assert [v["id"] for v in versions] == [packet["id"], second["id"]]
        assert {v["id"] for v in await _ok(client, "packets_list", {"case_id": c})} == {
            packet["id"],
            second["id"],
        }
        comparison = await _ok(
            client,
            "packet_compare",
            {"case_id": c, "packet_id": packet["id"], "other_id": second["id"]},
        )
        assert [r["document_id"] for r in comparison["items_removed"]] == [wrong]
        assert comparison["items_added"] == [] and len(items) == 2

        # A draft's second version and its diff.
        draft = await _ok(
            client,
            "draft_create",
            {"case_id": c, "body": {"title": "Motion", "kind": "motion",
                                    "packet_id": packet["id"],
                                    "text": "The lease began on 3 March 2024."}},
        )  # fmt: skip
        version = await _ok(
            client,
            "version_add",
            {"case_id": c, "draft_id": draft["id"],
             "body": {"text": "The lease began on 4 March 2024."}},
        )  # fmt: skip
        assert version["number"] == 2 and "4 March" in version["text"]
        diff = await _ok(client, "version_diff", {"case_id": c, "draft_id": draft["id"],
                                                  "number": 2})  # fmt: skip
        changed = {(op["op"], op["text"].strip()) for op in diff["ops"] if op["op"] != "equal"}
        assert changed == {("delete", "3"), ("insert", "4")}, diff["ops"]

    with rf.ThreadWorker(), served_asgi() as base:
        _agent(base, secret, matter)
        rest = httpx.get(base + seen["zip_path"], headers={"Authorization": f"Bearer {secret}"})
    assert rest.status_code == 200 and rest.content == seen["zip"]

    case = Case.objects.get(pk=seen["case"])
    assert Membership.objects.get(case=case, user=staff).role == Membership.Role.STAFF
    for action in ("case.create", "case.member_add", "document.withdraw", "production.export"):
        assert AuditEvent.objects.filter(action=action, actor=lawyer, via="mcp").exists(), action
    assert Packet.objects.filter(case=case).count() == 2


@pytest.mark.slow
def test_the_transactions_csv_and_a_flag_cleared_over_mcp_are_the_apis(
    lawyer: User, staff: User, case: Case, lawyer_api: Client
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    run = financial_run(case=case, user=lawyer, packet=packet)
    document = flagged(case, lawyer)
    staff_secret, _ = token_for(staff)
    secret, _ = token_for(lawyer)
    where = {"case_id": case.pk, "document_id": document.pk, "body": {"reason": REASON}}

    async def script(client: McpClient) -> dict[str, Any]:
        async with _connected(served["base"], staff_secret) as staff_client:
            by_staff = _error(await _refused(staff_client, "document_flag_clear", where))
            table = await _ok(
                staff_client, "run_transactions_csv", {"case_id": case.pk, "run_id": run.pk}
            )
        cleared = await _ok(client, "document_flag_clear", where)
        again = _error(await _refused(client, "document_flag_clear", where))
        return {"by_staff": by_staff, "table": table, "cleared": cleared, "again": again}

    served: dict[str, str] = {}
    with served_asgi() as base:
        served["base"] = base
        got = _agent(base, secret, script)

    assert got["by_staff"] == {
        "detail": got["by_staff"]["detail"],
        "code": "lawyer_required",
        "status": 403,
    }
    cleared = got["cleared"]
    assert cleared["id"] == document.pk and cleared["provenance"] == "clear"
    assert cleared["flag_clearances"][0]["reason"] == REASON
    assert got["again"]["code"] == "flag_already_cleared" and got["again"]["status"] == 409
    assert AuditEvent.objects.filter(action="document.flag_cleared", via="mcp").count() == 1

    table = got["table"]
    text = base64.b64decode(table["content_base64"]).decode("utf-8")
    assert text.startswith("\ufeff") and table["media_type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(text[1:], newline="")))
    assert [r["amount"] for r in rows] == [row["amount"] for row in ROWS]
    rest = lawyer_api.get(table["download_path"])
    assert rest.status_code == 200 and rest.content.decode("utf-8") == text
    assert table["artifact_id"] == int(rest["X-Lexweb-Artifact"])  # the same artifact, once


def _ms(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _to_ms(value: Any) -> Any:
    """`value` with its times (`..._at`) to the millisecond."""
    if isinstance(value, list):
        return [_to_ms(v) for v in value]
    if isinstance(value, dict):
        return {
            k: _ms(v) if k.endswith("_at") and isinstance(v, str) else _to_ms(v)
            for k, v in value.items()
        }
    return value


@pytest.mark.slow
def test_the_lists_of_runs_and_drafts_over_mcp_are_the_apis(
    lawyer: User, case: Case, lawyer_api: Client
) -> None:
    # An agent that comes back to a matter finds its runs (by status and kind) and the drafts
    # they wrote without knowing their ids.
    packet = rf.frozen_packet(case=case, user=lawyer)
    table = financial_run(case=case, user=lawyer, packet=packet)
    summary = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
    assert table.draft_id is not None and summary.status == Run.Status.QUEUED
    secret, _ = token_for(lawyer)
    c = case.pk
    asks: dict[str, tuple[str, dict[str, Any]]] = {
        "runs": ("runs_list", {"case_id": c}),
        "succeeded": ("runs_list", {"case_id": c, "status": "succeeded"}),
        "summaries": ("runs_list", {"case_id": c, "kind": "summary"}),
        "none": ("runs_list", {"case_id": c, "status": "rejected", "kind": "financial"}),
        "second": ("runs_list", {"case_id": c, "limit": 1, "offset": 1}),
        "drafts": ("drafts_list", {"case_id": c}),
    }

    async def script(client: McpClient) -> dict[str, Any]:
        answers = {name: await _ok(client, tool, args) for name, (tool, args) in asks.items()}
        answers["bad_status"] = _error(
            await _refused(client, "runs_list", {"case_id": c, "status": "done"})
        )
        return answers

    with served_asgi() as base:
        got = _agent(base, secret, script)

    assert [r["id"] for r in got["runs"]] == [summary.pk, table.pk]
    assert [r["id"] for r in got["succeeded"]] == [table.pk]
    assert [r["id"] for r in got["summaries"]] == [summary.pk]
    assert got["none"] == [] and [r["id"] for r in got["second"]] == [table.pk]
    assert got["runs"][1]["draft_id"] == table.draft_id and got["runs"][0]["draft_id"] is None
    assert [d["id"] for d in got["drafts"]] == [table.draft_id]
    # The same items the REST lists answer, field for field (`last_event` included; times to
    # the millisecond, as the REST API writes them).
    rest_runs = lawyer_api.get(f"/api/v1/cases/{c}/runs").json()["items"]
    rest_succeeded = lawyer_api.get(f"/api/v1/cases/{c}/runs?status=succeeded").json()["items"]
    rest_drafts = lawyer_api.get(f"/api/v1/cases/{c}/drafts").json()["items"]
    assert _to_ms(got["runs"]) == _to_ms(rest_runs)
    assert _to_ms(got["succeeded"]) == _to_ms(rest_succeeded)
    assert _to_ms(got["drafts"]) == _to_ms(rest_drafts)
    assert got["bad_status"]["code"] == "invalid" and got["bad_status"]["status"] == 422
    assert [e["loc"] for e in got["bad_status"]["errors"]] == [["status"]]
    for action in ("run.list", "draft.list"):
        assert AuditEvent.objects.filter(action=action, actor=lawyer, via="mcp").exists(), action


@pytest.mark.slow
def test_a_non_member_gets_the_apis_not_found_from_every_new_tool(
    lawyer: User, staff: User, case: Case, outsider: User, other_case: Case, outsider_api: Client
) -> None:
    secret, _ = token_for(outsider)
    packet = rf.frozen_packet(case=case, user=lawyer)
    run = financial_run(case=case, user=lawyer, packet=packet)
    document = Document.objects.filter(case=case).first()
    assert document is not None
    rest = outsider_api.get(f"/api/v1/cases/{case.pk}/tags")
    assert rest.status_code == 404
    c, ids = case.pk, {"document_id": document.pk}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("case_get", {"case_id": c}),
        ("case_update", {"case_id": c, "body": {"title": "Mine now"}}),
        ("members_list", {"case_id": c}),
        ("member_add", {"case_id": c, "body": {"email": "outsider@firm.test"}}),
        ("member_change_role", {"case_id": c, "user_id": staff.pk, "body": {"role": "lawyer"}}),
        ("member_remove", {"case_id": c, "user_id": staff.pk}),
        ("tags_list", {"case_id": c}),
        ("documents_tag", {"case_id": c, "body": {"document_ids": [document.pk], "name": "x"}}),
        ("documents_untag", {"case_id": c, "body": {"document_ids": [document.pk], "tag_id": 1}}),
        ("documents_withdraw", {"case_id": c, "body": {"document_ids": [document.pk],
                                                       "reason": "Not ours at all."}}),
        ("document_restore", {"case_id": c, **ids}),
        ("document_flag_clear", {"case_id": c, **ids, "body": {"reason": REASON}}),
        ("productions_list", {"case_id": c}),
        ("production_volume", {"case_id": c, "production_id": 1}),
        ("production_export_create", {"case_id": c, "production_id": 1, "body": {}}),
        ("production_export_get", {"case_id": c, "production_id": 1, "export_id": 1}),
        ("production_export_download", {"case_id": c, "production_id": 1, "export_id": 1}),
        ("packets_list", {"case_id": c}),
        ("packet_item_remove", {"case_id": c, "packet_id": packet.pk, "item_id": 1}),
        ("packet_version_create", {"case_id": c, "packet_id": packet.pk}),
        ("packet_versions", {"case_id": c, "packet_id": packet.pk}),
        ("packet_compare", {"case_id": c, "packet_id": packet.pk, "other_id": packet.pk}),
        ("version_add", {"case_id": c, "draft_id": 1, "body": {"text": "Mine."}}),
        ("version_diff", {"case_id": c, "draft_id": 1, "number": 2}),
        ("run_transactions_csv", {"case_id": c, "run_id": run.pk}),
        ("runs_list", {"case_id": c}),
        ("drafts_list", {"case_id": c}),
    ]  # fmt: skip

    async def script(client: McpClient) -> list[str]:
        return [await _refused(client, name, arguments) for name, arguments in calls]

    with served_asgi() as base:
        texts = _agent(base, secret, script)
    for (name, _), text in zip(calls, texts, strict=True):
        assert _error(text) == {**rest.json(), "status": 404}, name
    assert case.title != "Mine now" and not case.memberships.filter(user=outsider).exists()
    assert Run.objects.get(pk=run.pk).case_id == c


@pytest.mark.slow
def test_bad_arguments_unknown_ids_and_refusals_answer_as_the_api(
    lawyer: User, staff: User, case: Case, settings: SettingsWrapper
) -> None:
    secret, _ = token_for(lawyer)
    staff_secret, _ = token_for(staff)
    c = case.pk
    too_many = list(range(1, MAX_BULK_DOCUMENTS + 2))

    async def script(client: McpClient) -> dict[str, str]:
        async with _connected(served["base"], staff_secret) as staff_client:
            by_staff = await _refused(
                staff_client,
                "case_create",
                {"body": {"title": "T", "number": "N-1", "client": "C"}},
            )
        return {
            "by_staff": by_staff,
            "id_as_text": await _refused(client, "members_list", {"case_id": str(c)}),
            "id_in_list_as_text": await _refused(
                client, "documents_tag",
                {"case_id": c, "body": {"document_ids": ["1"], "name": "x"}},
            ),
            "too_many": await _refused(
                client, "documents_tag", {"case_id": c, "body": {"document_ids": too_many,
                                                                 "name": "x"}}
            ),
            "long_reason": await _refused(
                client, "packet_item_remove",
                {"case_id": c, "packet_id": 1, "item_id": 1, "reason": "x" * 2001},
            ),
            "unknown_field": await _refused(
                client, "case_update", {"case_id": c, "body": {"judge": "Nobody"}}
            ),
            "against_too_big": await _refused(
                client, "version_diff",
                {"case_id": c, "draft_id": 1, "number": 2, "against": 2**31},
            ),
            "unknown_document": await _refused(
                client, "document_restore", {"case_id": c, "document_id": 2**63 - 1}
            ),
            "unknown_export": await _refused(
                client, "production_export_get",
                {"case_id": c, "production_id": 1, "export_id": 1},
            ),
            "unknown_member": await _refused(
                client, "member_add", {"case_id": c, "body": {"email": "nobody@firm.test"}}
            ),
            "not_a_table": await _refused(
                client, "run_transactions_csv", {"case_id": c, "run_id": 2**62}
            ),
            "key_not_ascii": await _refused(
                client, "case_create",
                {"body": {"title": "T", "number": "N", "client": "C"}, "idempotency_key": "clé"},
            ),
            "key_blank": await _refused(
                client, "case_create",
                {"body": {"title": "T", "number": "N", "client": "C"}, "idempotency_key": "  "},
            ),
        }  # fmt: skip

    served: dict[str, str] = {}
    with served_asgi() as base:
        served["base"] = base
        got = {name: _error(text) for name, text in _agent(base, secret, script).items()}

    assert got["by_staff"]["code"] == "forbidden" and got["by_staff"]["status"] == 403
    for name, loc in (
        ("id_as_text", ["case_id"]),
        ("id_in_list_as_text", ["body", "document_ids"]),
        ("too_many", ["body", "document_ids"]),
        ("long_reason", ["reason"]),
        ("unknown_field", ["body", "judge"]),
        ("against_too_big", ["against"]),
        ("key_not_ascii", ["idempotency_key"]),
    ):
        assert got[name]["code"] == "invalid" and got[name]["status"] == 422, name
        assert [e["loc"] for e in got[name]["errors"]] == [loc], (name, got[name])
    for name in ("unknown_document", "unknown_export", "not_a_table", "unknown_member"):
        assert got[name]["code"] == "not_found" and got[name]["status"] == 404, name
    assert got["key_blank"] == {
        "detail": "The Idempotency-Key header is empty.",
        "code": "invalid_idempotency_key",
        "status": 400,
    }
    assert Case.objects.count() == 1


@pytest.mark.slow
def test_an_idempotency_key_does_a_write_once_and_refuses_another_request(
    lawyer: User, outsider: User, case: Case
) -> None:
    secret, _ = token_for(lawyer)
    other_secret = account_services.token_create(user=lawyer, name="second").secret
    body = {"title": "Acme v. Widget", "number": "CV-2026-0202", "client": "Acme"}
    key = "open-acme-1"

    async def script(client: McpClient) -> dict[str, Any]:
        first = await _ok(client, "case_create", {"body": body, "idempotency_key": key})
        again = await _ok(client, "case_create", {"body": body, "idempotency_key": key})
        other = await _refused(
            client, "case_create", {"body": {**body, "client": "Widget"}, "idempotency_key": key}
        )
        # A refusal is the key's answer too: the same call answers it again, running nothing.
        removal = {"case_id": first["id"], "user_id": lawyer.pk, "idempotency_key": "rm-1"}
        last_lawyer = await _refused(client, "member_remove", removal)
        await _ok(
            client,
            "member_add",
            {"case_id": first["id"], "body": {"email": outsider.email, "role": "lawyer"}},
        )
        replayed_refusal = await _refused(client, "member_remove", removal)
        async with _connected(served["base"], other_secret) as other_client:
            another_token = await _refused(
                other_client, "case_create", {"body": body, "idempotency_key": key}
            )
        return {
            "first": first,
            "again": again,
            "other": _error(other),
            "last_lawyer": _error(last_lawyer),
            "replayed_refusal": _error(replayed_refusal),
            "another_token": _error(another_token),
        }

    served: dict[str, str] = {}
    with served_asgi() as base:
        served["base"] = base
        got = _agent(base, secret, script)

    assert got["again"] == got["first"]
    assert got["other"]["code"] == "idempotency_key_reused" and got["other"]["status"] == 409
    assert got["last_lawyer"]["status"] == 409
    assert got["replayed_refusal"] == got["last_lawyer"]
    # Keys are per token: with another token the same key and call run again (and the case
    # service refuses a second case of that number), not the first token's answer.
    assert got["another_token"]["code"] == "conflict", got["another_token"]
    assert "already exists" in got["another_token"]["detail"]
    assert Case.objects.filter(number="CV-2026-0202").count() == 1
    assert AuditEvent.objects.filter(action="case.create", via="mcp").count() == 1
    assert Membership.objects.filter(case_id=got["first"]["id"], user=lawyer).exists()
