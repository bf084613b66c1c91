"""The admin's audit log says what happened in words (issue 25 req 6): every action code the
product writes has words (apps.accounts.audit_words, filled by each app's AppConfig.ready), the
list and an event's page show them, and the code is still searched and filtered by."""

import ast
import re
from pathlib import Path

import pytest
from django.test import Client

from apps.accounts import audit_words
from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case, Membership
from tests.conftest import BASE_DIR
from tests.factories import MembershipFactory


def _strings(node: ast.expr | None) -> list[str]:
    """The literal texts an expression may be: "a", or "a" if x else "b"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    return []


def _defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.expr | None]]:
    """A function's parameters with their defaults (the last positional ones have them)."""
    positional = args.posonlyargs + args.args
    with_default = positional[len(positional) - len(args.defaults) :]
    return [
        *zip(with_default, args.defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]


def written_action_codes(root: Path = BASE_DIR) -> dict[str, set[str]]:
    """Code → the modules that write it: every literal passed as `action=` to a call, and every
    literal default of a parameter named `action` (`signin_failure_record`'s, `document_ingest`'s),
    in the product's modules. A code has a dot ("token.create"), which leaves out argparse's
    `action="store_true"`."""
    found: dict[str, set[str]] = {}
    for package in ("apps", "lexweb"):
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            where = str(path.relative_to(root))
            for node in ast.walk(ast.parse(path.read_text(), filename=where)):
                values: list[ast.expr | None] = []
                if isinstance(node, ast.Call):
                    values += [kw.value for kw in node.keywords if kw.arg == "action"]
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    values += [d for arg, d in _defaults(node.args) if arg.arg == "action"]
                for value in values:
                    for code in _strings(value):
                        if "." in code:
                            found.setdefault(code, set()).add(where)
    return found


@pytest.mark.slow
def test_every_action_code_the_product_writes_has_words() -> None:
    written = written_action_codes()
    # The walk finds the codes however they are passed: a keyword, a default, a conditional.
    assert {"document.upload", "auth.login_failed", "cluster.deployment_update"} <= set(written)
    assert len(written) > 80

    missing = {code: sorted(where) for code, where in written.items()}
    missing = {c: w for c, w in missing.items() if c not in audit_words.registered_codes()}
    assert not missing, f"action codes written without words (apps.accounts.audit_words): {missing}"

    for code in sorted(audit_words.registered_codes()):
        text = audit_words.action_text(AuditEvent(action=code, target_label="contract.pdf"))
        assert text and text != code and "{" not in text and "}" not in text, (code, text)


def test_a_code_nobody_told_is_shown_as_its_code() -> None:
    assert audit_words.action_text(AuditEvent(action="nobody.wrote_this")) == "nobody.wrote_this"


@pytest.mark.django_db
def test_the_admin_lists_and_shows_an_action_in_words_and_still_finds_it_by_its_code(
    admin_client_: Client, admin_user: User, case: Case
) -> None:
    MembershipFactory(case=case, user=admin_user, role=Membership.Role.LAWYER)
    token = AuditEvent.objects.create(
        actor_label="Ada Admin", action="token.create", target_label="laptop (lxw_ab12_…)"
    )
    AuditEvent.objects.create(actor_label="Ada Admin", action="auth.login")
    # A case's events are told with the case page's activity sentences.
    AuditEvent.objects.create(
        actor_label="Laura Lawyer", action="document.upload", case=case, target_label="memo.pdf"
    )
    AuditEvent.objects.create(actor_label="Laura Lawyer", action="document.list", case=case)

    listing = admin_client_.get("/admin/accounts/auditevent/").content.decode()
    assert '<td class="field-action_words">created API token laptop (lxw_ab12_…)</td>' in listing
    assert '<td class="field-action_words">signed in</td>' in listing
    assert '<td class="field-action_words">uploaded memo.pdf</td>' in listing
    assert '<td class="field-action_words">looked at the document list</td>' in listing
    assert '<td class="field-action_words">token.create</td>' not in listing
    assert "By action code" in listing and "?action=token.create" in listing  # the filter

    searched = admin_client_.get("/admin/accounts/auditevent/", {"q": "token.create"})
    assert [e.pk for e in searched.context["cl"].result_list] == [token.pk]
    filtered = admin_client_.get("/admin/accounts/auditevent/", {"action": "document.upload"})
    assert [e.action for e in filtered.context["cl"].result_list] == ["document.upload"]
    # The column sorts by the code.
    column = searched.context["cl"].list_display.index("action_words")
    ordered = admin_client_.get("/admin/accounts/auditevent/", {"o": str(column)})
    actions = [e.action for e in ordered.context["cl"].result_list]
    assert actions == sorted(actions)

    page = admin_client_.get(f"/admin/accounts/auditevent/{token.pk}/change/").content.decode()
    assert "created API token laptop (lxw_ab12_…)" in page
    assert "Action code" in page and "token.create" in page
    # The page's title, heading and breadcrumb say it in words, not by its code.
    told = f"{token.at:%Y-%m-%d %H:%M:%S} Ada Admin created API token laptop (lxw_ab12_…)"
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert title and title.group(1).startswith(f"{told} | "), title
    assert f"<h2>{told}</h2>" in page
    assert re.search(r'<div class="breadcrumbs">.*?created API token laptop', page, re.S)
    assert "token.create" not in title.group(1)


def test_one_event_is_told_as_the_case_page_tells_it_alone() -> None:
    def told(action: str, **fields: object) -> str:
        return audit_words.action_text(AuditEvent(action=action, **fields))

    assert told("document.page", target_label="memo.pdf") == "looked at a page image"
    assert told("production.export_download") == "looked at an export download"
    assert told("document.view", target_label="memo.pdf") == "looked at document memo.pdf"
    member = "Sam Staff on CV-2026-0001 as staff"
    added = told("case.member_add", target_label=member, detail={"role": "staff"})
    assert added == "added Sam Staff to the case as staff"
    assert told("token.revoke", target_label="laptop") == "revoked API token laptop"
