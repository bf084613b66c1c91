"""A real browser against a real `make run`, under the Content-Security-Policy lexweb sends:
every page of ours, the Django admin and the API docs work, and Chromium reports no violation.

Violations are caught in the page itself (a `securitypolicyviolation` listener installed
before any script of the page runs, as an init script, which the policy does not govern). To
show that the listener hears what the policy blocks, one inline script is injected on purpose:
it must not run, and it must be reported.
"""

import json
from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.e2e.steps import choose_files, row, write_pdf
from tests.harness.browser import csp_violations, goto, listen_for_csp, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FILENAME = "e2e-brief.pdf"
ROW = row(FILENAME)
INJECT = """
(() => { const s = document.createElement('script'); s.textContent = 'window.__ran = true';
  document.body.appendChild(s); return true; })()
"""

HEADERS = """
(async () => {
  const pick = (r) => [r.headers.get('content-security-policy'), r.headers.get('cache-control')];
  const link = document.querySelector('link[rel=stylesheet]').getAttribute('href');
  return {page: pick(await fetch('/')), static: pick(await fetch(link))};
})()
"""


async def _visit(page: Page, url: str, ready: str, seen: dict[str, list[str]]) -> None:
    await goto(page, url)
    await wait_for(page, ready)
    seen[url] = await csp_violations(page)


async def test_pages_admin_and_api_docs_work_under_the_policy_without_violations(
    page: Page, product: Product, tmp_path: Path
) -> None:
    pdf = write_pdf(tmp_path / FILENAME, ["Brief for the policy test."])
    case = product.new_case()
    seen: dict[str, list[str]] = {}
    await listen_for_csp(page)
    await goto(page, "/accounts/login/")
    seen["login"] = await csp_violations(page)
    await sign_in(page, product.admin)
    seen["/"] = await csp_violations(page)

    # What the real server (uvicorn, ASGI) sends: the policy and no-store on a page,
    # the policy and whitenoise's caching on a static file.
    headers = await page.evaluate(HEADERS)
    assert headers["page"][0].startswith("default-src 'self'; script-src 'self'")
    assert headers["page"][1] == "no-store"
    assert headers["static"][0] == headers["page"][0]
    assert "no-store" not in (headers["static"][1] or "")

    # The policy is enforced: an injected inline script is blocked and reported.
    assert await page.evaluate(INJECT)
    blocked = await csp_violations(page)
    assert await page.evaluate("window.__ran === undefined")
    assert any(v.startswith("script-src") for v in blocked), blocked

    live = "document.querySelector('#live-state')?.textContent === 'live'"
    await _visit(page, case.path, live, seen)
    documents = f"{case.path}documents/"
    await _visit(page, documents, live, seen)
    await choose_files(page, pdf)
    await wait_for(page, f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready'", 90)
    seen["upload"] = await csp_violations(page)
    detail = await page.evaluate(f"{ROW}.querySelector('a').getAttribute('href')")
    # Page images come from our API (img-src 'self') and are drawn.
    await _visit(
        page, detail, "[...document.images].some((i) => i.complete && i.naturalWidth > 0)", seen
    )
    complete = "document.readyState === 'complete'"
    await _visit(page, f"{case.path}search/?q=brief", complete, seen)
    await _visit(page, f"{case.path}bates/?ref=X1", complete, seen)
    # The draft pages (the version page is walked by tests/e2e/test_draft_view.py).
    await _visit(page, f"{case.path}drafts/", "!!document.querySelector('.drafts-page')", seen)
    await _visit(page, f"{case.path}drafts/new/", "!!document.querySelector('#id_packet')", seen)
    await _visit(page, "/cluster/", live, seen)
    await _visit(page, "/accounts/tokens/", "!!document.querySelector('form')", seen)
    await _visit(page, "/cases/new/", "!!document.querySelector('form')", seen)
    await _visit(page, "/cases/break-glass/", "!!document.querySelector('form')", seen)
    await _visit(page, "/cases/987654321/", complete, seen)

    # The admin: its scripts run (the inline "Add another" rows, the theme toggle).
    await _visit(page, "/admin/", "!!document.querySelector('#content')", seen)
    await _visit(page, "/admin/cluster/host/add/", "!!document.querySelector('.add-row a')", seen)
    await _visit(page, "/admin/cluster/backend/", "!!document.querySelector('#changelist')", seen)
    await _visit(
        page, "/admin/accounts/auditevent/", "!!document.querySelector('#changelist')", seen
    )
    await _visit(
        page,
        "/admin/procrastinate/procrastinatejob/",
        "!!document.querySelector('#result_list tbody a')",
        seen,
    )
    # A row's link (the header's task and status links sort the list).
    job = await page.evaluate("document.querySelector('#result_list tbody a').getAttribute('href')")
    await _visit(page, job, "!!document.querySelector('#content-main')", seen)
    await _visit(page, "/admin/accounts/user/add/", "!!document.querySelector('form')", seen)
    # The API docs: Swagger UI renders the operations.
    await _visit(
        page, "/api/v1/docs", "document.querySelectorAll('.swagger-ui .opblock').length > 10", seen
    )

    violations = {url: found for url, found in seen.items() if found}
    assert violations == {}, json.dumps(violations, indent=2)
