"""Every response carries a Content-Security-Policy, and every one that may carry client material
or a secret carries `Cache-Control: no-store`.

The first tests walk the URL resolver, so a route added later is checked without anyone listing
it: each route is requested signed in (as a lawyer on the case for our pages and the API, as an
admin for the admin), with real ids, and whatever it answers (200, a download, 302, 404, 405)
must have both headers. Every HTML page answered is also read: no inline script, no `style=""`
attribute, and an inline `<style>` only where the policy sent with it allows its hash.
"""

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, include, path
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.models import Document, Production, ProductionExport
from lexweb import security
from tests.conftest import session_client, token_client
from tests.drafting.run_fixtures import run_ids_for_tables
from tests.drafting.table_fixtures import financial_run_id
from tests.factories import MembershipFactory
from tests.test_access_matrix import _draft_ids, _packet_ids, document, junior  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

_KWARG = re.compile(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>[^)]*\)")
_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>")
_STYLE_ATTRIBUTE = re.compile(r"<[a-zA-Z][^>]*\sstyle\s*=", re.IGNORECASE)
_STYLE_VALUE = re.compile(r"<[a-zA-Z][^>]*\sstyle=\"([^\"]*)\"", re.IGNORECASE)
_EVENT_HANDLER = re.compile(r"<[a-zA-Z][^>]*\son[a-z]+\s*=", re.IGNORECASE)
_STYLE_BLOCK = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)
TEMPLATES = Path(settings.BASE_DIR) / "templates"


def _walk(patterns: Sequence[URLPattern | URLResolver], prefix: str = "") -> Iterator[str]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern)


def _concrete(route: str, ids: dict[str, Any]) -> str:
    """The route with its arguments filled in (regex routes of the admin too)."""
    filled = _KWARG.sub(lambda m: str(ids[m.group(1) or m.group(2)]), route)
    return "/" + filled.replace("^", "").replace("$", "")


def _ids(case: Case, member: User, doc: Document, admin: User) -> dict[str, Any]:
    production = Production.objects.get(case=case, volume="MATRIX1")
    packets = _packet_ids(case)
    drafts = _draft_ids(case)
    return {
        "draft_id": drafts["draft"],
        "finding_id": drafts["finding"],
        "run_id": run_ids_for_tables(case, "MATRIX")["run"],
        "packet_id": packets["frozen"],
        "item_id": packets["editable_item"],
        "other_id": packets["editable"],
        "case_id": case.pk,
        "user_id": member.pk,
        "document_id": doc.pk,
        "number": 1,
        "production_id": production.pk,
        "export_id": ProductionExport.objects.get(production=production).pk,
        "reference": "MTX000001",
        "token_id": 1,
        "secret": "no-such-sign-in-link",  # a sign-in link's page: "this link does not work"
        # Admin change pages of the admin's own user answer 200; other models' say "no such".
        "object_id": admin.pk,
        "content_type_id": 1,
        "app_label": "cluster",
        "url": "no-such-admin-page/",
    }


def assert_secure(response: Any, where: str) -> None:
    policy = response.get("Content-Security-Policy", "")
    assert policy == security.policy_for(response.wsgi_request.path), where
    assert "default-src 'self'" in policy, where
    assert response.get("Cache-Control") == "no-store", where
    if response.get("Content-Type", "").startswith("text/html"):
        _assert_no_inline_code(response.content.decode(), policy, where)


def _assert_no_inline_code(html: str, policy: str, where: str) -> None:
    assert not _INLINE_SCRIPT.search(html), f"{where}: inline <script>"
    assert not _EVENT_HANDLER.search(html), f"{where}: on...= handler"
    style_src = next(d for d in policy.split("; ") if d.startswith("style-src ")).split()
    for block in _STYLE_BLOCK.findall(html):
        assert security.inline_hash(block) in style_src, f"{where}: <style> not allowed"
    # A style attribute only where the policy allows that exact value by its hash.
    attributes = _STYLE_VALUE.findall(html)
    assert len(attributes) == len(_STYLE_ATTRIBUTE.findall(html)), f"{where}: odd style="
    for value in attributes:
        allowed = "'unsafe-hashes'" in style_src and security.inline_hash(value) in style_src
        assert allowed, f"{where}: style={value!r} not allowed"


@pytest.fixture
def admin_member(admin_user: User, case: Case) -> User:
    """An admin on the case, so the admin's case pages render too."""
    MembershipFactory(case=case, user=admin_user)
    return admin_user


@pytest.mark.slow
def test_every_route_answers_with_the_policy_and_no_store_signed_in(
    lawyer: User,
    admin_member: User,
    junior: User,  # noqa: F811
    case: Case,
    document: Document,  # noqa: F811
) -> None:
    ids = _ids(case, junior, document, admin_member)
    member, admin = session_client(lawyer), session_client(admin_member)
    routes = list(_walk(get_resolver().url_patterns))
    statuses: dict[int, int] = {}

    for route in routes:
        url = _concrete(route, ids)
        client = admin if route.startswith("admin/") else member
        response = client.get(url)
        assert_secure(response, f"GET {url}")
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    # Not vacuous: the walk reached pages, downloads, redirects, refusals and misses.
    assert len(routes) > 100
    assert {200, 302, 404, 405} <= set(statuses)


def test_api_downloads_by_bearer_token_are_not_stored(
    lawyer: User,
    junior: User,  # noqa: F811
    case: Case,
    document: Document,  # noqa: F811
    admin_user: User,
) -> None:
    ids = _ids(case, junior, document, admin_user)
    client = token_client(lawyer)
    downloads = [
        "api/v1/cases/<case_id>/documents/<document_id>/original",
        "api/v1/cases/<case_id>/documents/<document_id>/pages/<number>/image",
        "api/v1/cases/<case_id>/productions/<production_id>/pdf",
        "api/v1/cases/<case_id>/productions/<production_id>/exports/<export_id>/zip",
        "api/v1/cases/<case_id>/runs/<run_id>/transactions.csv",
    ]
    # The table download needs a financial extraction with its table (the matrix makes one).
    ids = {**ids, "run_id": financial_run_id(case, "MATRIX")}

    for route in downloads:
        response = client.get(_concrete(route, ids))
        assert response.status_code == 200, route
        assert response["Content-Type"] != "application/json", route
        assert_secure(response, route)


def test_the_page_that_shows_a_new_token_secret_is_not_stored(lawyer: User) -> None:
    response = session_client(lawyer).post("/accounts/tokens/", {"name": "agent"})

    assert response.status_code == 200
    assert "lxw_" in response.content.decode()  # the secret, shown this once
    assert_secure(response, "POST /accounts/tokens/")


def test_sign_in_page_and_failed_sign_in_carry_both_headers(db: None) -> None:
    client = Client()

    assert_secure(client.get("/accounts/login/"), "GET login")
    assert_secure(
        client.post("/accounts/login/", {"username": "no@firm.test", "password": "wrong"}),
        "POST login",
    )
    assert_secure(client.get("/admin/login/"), "GET admin login")


# --- Error pages --------------------------------------------------------------------------


def _raises_permission_denied(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied("Not for you.")


def _raises_error(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("A bug in a view.")


urlpatterns = [
    path("boom/403/", _raises_permission_denied),
    path("boom/500/", _raises_error),
    path("", include("lexweb.urls")),
]


@pytest.mark.urls(__name__)
@pytest.mark.parametrize(
    ("url", "status", "title"),
    [("/boom/403/", 403, "Forbidden"), ("/boom/500/", 500, "Server error")],
)
def test_error_pages_carry_both_headers(lawyer: User, url: str, status: int, title: str) -> None:
    client = session_client(lawyer)
    client.raise_request_exception = False

    response = client.get(url)

    assert response.status_code == status
    assert_secure(response, url)


def test_not_found_and_bad_host_pages_carry_both_headers(lawyer: User) -> None:
    client = session_client(lawyer)

    missing = client.get("/cases/987654321/")
    bad_host = client.get("/", HTTP_HOST="attacker.example")

    assert (missing.status_code, bad_host.status_code) == (404, 400)
    assert "Not found" in missing.content.decode()
    assert_secure(missing, "404")
    assert_secure(bad_host, "400")


# --- Static files and the policies themselves ---------------------------------------------


def test_static_files_get_the_policy_and_keep_their_caching(db: None) -> None:
    response = Client().get("/static/lexweb/app.css")

    assert response.status_code == 200
    assert response["Content-Security-Policy"] == security.PAGE_POLICY
    assert "no-store" not in response.get("Cache-Control", "")


def test_our_pages_allow_no_inline_script_or_style_at_all() -> None:
    directives = dict(d.split(" ", 1) for d in security.PAGE_POLICY.split("; "))

    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in security.PAGE_POLICY
    assert security.ADMIN_POLICY == security.PAGE_POLICY
    assert "unsafe" not in security.API_DOCS_POLICY


@pytest.mark.parametrize(
    ("path", "policy"),
    [
        ("/", "page"),
        ("/cases/1/", "page"),
        ("/api/v1/cases", "page"),
        ("/api/v1/docs", "docs"),
        ("/api/v1/docs/", "page"),
        ("/admin/", "admin"),
        ("/admin/cluster/host/", "admin"),
        ("/admin/procrastinate/procrastinatejob/", "admin"),
        ("/static/lexweb/app.js", "page"),
    ],
)
def test_each_path_gets_its_policy(path: str, policy: str) -> None:
    expected = {
        "page": security.PAGE_POLICY,
        "docs": security.API_DOCS_POLICY,
        "admin": security.ADMIN_POLICY,
    }
    assert security.policy_for(path) == expected[policy]


def test_the_job_queue_admin_writes_no_style_attribute_and_has_the_admins_policy(
    admin_user: User,
    lawyer: User,
    case: Case,
    document: Document,  # noqa: F811
) -> None:
    # The document fixture queued jobs, so the job list shows their arguments and a job's page
    # its history: in words (apps/operations/admin.py), which need no style attribute, so the
    # job queue's admin has the admin's policy (procrastinate's own columns wrote three).
    client = session_client(admin_user)
    job = ProcrastinateJob.objects.order_by("id").first()
    assert job is not None
    pages = [
        client.get("/admin/procrastinate/procrastinatejob/"),
        client.get(f"/admin/procrastinate/procrastinatejob/{job.pk}/change/"),
    ]
    values: set[str] = set()
    for response in pages:
        assert response.status_code == 200
        assert_secure(response, response.wsgi_request.path)
        values |= set(_STYLE_VALUE.findall(response.content.decode()))

    assert values == set()
    assert all(r["Content-Security-Policy"] == security.ADMIN_POLICY for r in pages)
    assert "'unsafe-hashes'" not in security.ADMIN_POLICY


def test_api_docs_get_data_images_and_nothing_else_more(lawyer: User) -> None:
    response = session_client(lawyer).get("/api/v1/docs")

    assert response.status_code == 200
    assert response["Content-Security-Policy"] == security.API_DOCS_POLICY
    assert "img-src 'self' data:" in security.API_DOCS_POLICY
    assert security.API_DOCS_POLICY.replace(" data:", "") == security.PAGE_POLICY
    assert_secure(response, "API docs")


def test_templates_hold_no_inline_script_style_or_handlers() -> None:
    offenders = []
    for template in sorted(TEMPLATES.rglob("*.html")):
        text = template.read_text(encoding="utf-8")
        for pattern in (_INLINE_SCRIPT, _STYLE_ATTRIBUTE, _EVENT_HANDLER, _STYLE_BLOCK):
            if pattern.search(text):
                offenders.append(f"{template.relative_to(TEMPLATES)}: {pattern.pattern}")

    assert offenders == []
    assert len(list(TEMPLATES.rglob("*.html"))) > 10
