"""Issue 25 req 7 for the Django admin, in a real browser against a real `make run`: axe-core
finds no serious or critical violation on any of the admin's pages. Signed in as the firm's
admin, one browser page opens the sign-in page, the index, each application's page and, for
every model registered in the admin site (read from `admin.site._registry` when the test runs,
so a model registered later is covered without a change here), its list, its add page where
the admin may add one (the list's Add link is checked against the model admin's own answer) and
the change (or view) page of one of its objects; then each model admin's own views (its
`get_urls` beyond Django's) for that object, and the admin's own password change page.

Every model's list must show an object: the test makes what the launched demo lacks as the
firm's people and the product make it (a case through the API, with API tokens; a permission
group on its add form; a document flagged by the generated-text registry and cleared by the
case's lawyer through the API; one call of a demo backend through the dispatcher). Each page
is checked by the harness (`goto`, which fails on a serious or critical violation) and
photographed (var/test-artifacts/screenshots/<test>/)."""

import contextlib
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.db import models
from django.test import RequestFactory
from django.urls import URLPattern, reverse
from playwright.async_api import Page

from apps.accounts.models import User
from tests.e2e.steps import write_pdf
from tests.harness.browser import arrive, goto, shot, sign_in
from tests.harness.product import CaseSetup, Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

# Django's own views of a model admin (ModelAdmin.get_urls): every other named view is the
# project's own and is opened too.
DJANGO_VIEWS = ("changelist", "add", "history", "delete", "change")
FIRST_OBJECT = "document.querySelector('#result_list tbody th a')?.getAttribute('href')"
ADD_LINK = "!!document.querySelector('.object-tools a.addlink')"

# Registered as the product registers what a model wrote (apps.evidence.services.registry),
# in the launched product's own database.
REGISTER = """
from apps.cases.models import Case
from apps.evidence.services import registry
text = {text!r}
registry.artifact_register(data=text.encode(), text=text, kind="model_output",
    media_type="text/markdown", title="E2E admin draft", case=Case.objects.get(pk={case_id}))
"""
# One call of a demo backend through the dispatcher, which records it (a CallRecord) whatever
# its outcome.
CALL = """
import asyncio
import contextlib
from apps.cluster.models import CallRecord, Deployment
from apps.cluster.services import dispatch
deployment = Deployment.objects.filter(enabled=True).order_by("pk").first()
with contextlib.suppress(Exception):
    asyncio.run(dispatch.chat(deployment=deployment.pk, max_tokens=8,
        messages=[{"role": "user", "content": "Say hello."}]))
print("CALLS", CallRecord.objects.count())
"""
WORDS = (
    "the lessee shall indemnify lessor against every claim arising from premises covenant "
    "breach notice default remedy tenant landlord court order motion evidence witness record "
    "hearing affidavit exhibit clause term renewal payment schedule damages interest"
)


def _text(seed: int, words: int = 420) -> list[str]:
    """Lines of repeatable legal-sounding words (what the registry recognises by its text)."""
    rng = random.Random(seed)  # noqa: S311  (repeatable text, not a secret)
    vocabulary = WORDS.split()
    chosen = [rng.choice(vocabulary) for _ in range(words)]
    return [" ".join(chosen[n : n + 10]) + "." for n in range(0, words, 10)]


def _cleared_flag(product: Product, case: CaseSetup, folder: Path) -> None:
    """A flag cleared by the case's lawyer: text lexweb generated (registered), the same words
    uploaded by the lawyer as the other side's document (flagged when read), and the lawyer's
    clearing with a written reason, through the REST API."""
    lines = _text(case.id)
    product.shell(REGISTER.format(text="\n".join(lines), case_id=case.id))
    pdf = write_pdf(folder / "e2e-admin-flagged.pdf", ["\n".join(lines)], fontsize=8)
    with contextlib.closing(product.signed_in(case.lawyer.email, case.lawyer.password)) as client:
        answer = client.post(
            f"/api/v1/cases/{case.id}/documents",
            files={"files": (pdf.name, pdf.read_bytes(), "application/pdf")},
            data={"origin": "opposing"},
            headers={"X-CSRFToken": client.cookies.get("csrftoken") or ""},
        )
        assert answer.status_code == 201, answer.text[:2000]
        document = answer.json()["results"][0]["document"]["id"]
        path = f"/cases/{case.id}/documents/{document}"
        deadline = time.monotonic() + 120
        while (state := product.api(client, "GET", path)["provenance"]) != "flagged":
            assert state in {"pending", "checking"} and time.monotonic() < deadline, state
            time.sleep(1)
        reason = "The other side's copy of our own draft; quoted by the registry by mistake."
        product.api(client, "POST", f"{path}/flag-clearance", {"reason": reason})


def _may_add(model_admin: "admin.ModelAdmin[Any]") -> bool:
    """What the model admin answers a firm's admin (a superuser, as every admin is)."""
    request = RequestFactory().get("/admin/")
    request.user = User(role=User.Role.ADMIN, is_staff=True, is_superuser=True, is_active=True)
    return bool(model_admin.has_add_permission(request))


def _own_views(model_admin: "admin.ModelAdmin[Any]") -> list[URLPattern]:
    opts = model_admin.model._meta
    django = {f"{opts.app_label}_{opts.model_name}_{view}" for view in DJANGO_VIEWS}
    return [
        pattern
        for pattern in model_admin.get_urls()
        if isinstance(pattern, URLPattern) and pattern.name and pattern.name not in django
    ]


def _name(model: type[models.Model], what: str) -> str:
    return f"{model._meta.app_label}-{model._meta.model_name}-{what}"


async def test_every_admin_page_has_no_serious_or_critical_accessibility_violation(
    page: Page, product: Product, tmp_path: Path
) -> None:
    started = time.monotonic()
    # What the demo lacks: a case of the admin's (with its people's API tokens), a cleared
    # flag on one of its documents, a recorded backend call.
    case = product.new_case("E2E admin matter", tokens=True)
    _cleared_flag(product, case, tmp_path)
    assert int(product.shell(CALL).split("CALLS", 1)[1].split()[0]) > 0

    made = time.monotonic() - started
    opened: list[str] = []  # the name of each page checked (its screenshot's)

    async def visit(url: str, name: str) -> None:
        await goto(page, url)  # checked with axe-core: fails on a serious or critical one
        await shot(page, name)
        opened.append(name)

    await visit("/admin/login/", "login")
    await sign_in(page, product.admin)
    await visit("/admin/", "index")
    # A permission group, made on its add form as an admin does.
    await visit("/admin/auth/group/add/", "group-new")
    await page.fill("#id_name", f"E2E reviewers {case.id}")
    async with page.expect_navigation():
        await page.click("input[name=_save]")
    await arrive(page, re.compile(r"/admin/auth/group/$"))

    registry = admin.site._registry
    for app_label in sorted({model._meta.app_label for model in registry}):
        await visit(reverse("admin:app_list", args=[app_label]), f"app-{app_label}")

    objects: dict[str, str] = {}  # a model's label: the address of the object opened
    for model, model_admin in registry.items():
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        await visit(url, _name(model, "list"))
        may_add = _may_add(model_admin)
        assert await page.evaluate(ADD_LINK) == may_add, (opts.label, may_add)
        first = await page.evaluate(FIRST_OBJECT)
        assert first, f"{opts.label}: the list shows no object to open"
        objects[opts.label] = first
        pk = re.findall(r"/(\d+)/change/", first)
        if may_add:
            url = reverse(f"admin:{opts.app_label}_{opts.model_name}_add")
            await visit(url, _name(model, "add"))
        await visit(first, _name(model, "change"))
        for pattern in _own_views(model_admin):
            args = pk[:1] if pattern.pattern.converters else []
            await visit(
                reverse(f"admin:{pattern.name}", args=args), _name(model, str(pattern.name))
            )

    await visit(reverse("admin:password_change"), "password-change")
    # Django's other pages of an object, on the group made here: its history and the question
    # before deleting it (not answered).
    group = objects["auth.Group"].split("?")[0]
    await visit(group.replace("/change/", "/history/"), "auth-group-history")
    await visit(group.replace("/change/", "/delete/"), "auth-group-delete")
    # Every model's list and object, and the project's own views (the people's tools, the job
    # queues).
    assert {_name(model, "change") for model in registry} <= set(opened), opened
    own = {"accounts_user_password", "accounts_user_issue_token", "operations_job_queues"}
    assert {name.rsplit("-", 1)[1] for name in opened if "_" in name} >= own, opened
    # Signing out with the header's button ends on the sign-in page (LOGOUT_REDIRECT_URL).
    async with page.expect_navigation():
        await page.click("#logout-form button")
    await arrive(page, re.compile(r"/accounts/login/"))
    await shot(page, "signed-out")
    print(  # noqa: T201  (its run time, for the status page)
        f"admin data made in {made:.1f} s; {len(opened)} admin pages checked in "
        f"{time.monotonic() - started - made:.1f} s"
    )
