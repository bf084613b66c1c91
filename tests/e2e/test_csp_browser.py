"""A real browser against a real `make run`, under the Content-Security-Policy lexweb sends:
every page of ours, the Django admin and the API docs work, and Chromium reports no violation.

Violations are caught in the page itself (a `securitypolicyviolation` listener installed
before any script of the page runs, through the DevTools protocol, which the policy does not
govern). To show that the listener hears what the policy blocks, one inline script is injected
on purpose: it must not run, and it must be reported.
"""

import json
import os
import signal
from pathlib import Path

import pymupdf
import pytest

from tests.e2e.cdp import Page, browser_page, chromium_path
from tests.e2e.test_documents_browser import ROW, _choose_file, _sign_in
from tests.running import free_port, launch, launcher_env, read_until

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )

FILENAME = "e2e-brief.pdf"
LISTEN = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(
  [e.violatedDirective, e.blockedURI, (e.sourceFile || '') + ':' + e.lineNumber, e.sample]
    .join(' | ')));
"""
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


async def _violations(page: Page) -> list[str]:
    # Reported asynchronously: give the browser its turn before reading.
    await page.evaluate("new Promise((r) => setTimeout(r, 300))")
    found: list[str] = await page.evaluate("window.__csp || []")
    return found


async def _visit(page: Page, url: str, ready: str, seen: dict[str, list[str]]) -> None:
    await page.goto(url)
    await page.wait_for(ready, timeout=30)
    seen[url] = await _violations(page)


async def test_pages_admin_and_api_docs_work_under_the_policy_without_violations(
    var_dir: Path, tmp_path: Path
) -> None:
    pdf = tmp_path / FILENAME
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "Brief for the policy test.")
        doc.save(pdf)
    port = free_port()
    server = launch(["run"], launcher_env(var_dir, port))
    base = f"http://127.0.0.1:{port}"
    seen: dict[str, list[str]] = {}
    try:
        read_until(server, "Starting worker", "running at")
        async with browser_page() as page:
            await page.call("Page.addScriptToEvaluateOnNewDocument", source=LISTEN)
            await page.goto(f"{base}/accounts/login/")
            seen["login"] = await _violations(page)
            await _sign_in(page, base)
            seen["/"] = await _violations(page)

            # What the real server (uvicorn, ASGI) sends: the policy and no-store on a page,
            # the policy and whitenoise's caching on a static file.
            headers = await page.evaluate(HEADERS)
            assert headers["page"][0].startswith("default-src 'self'; script-src 'self'")
            assert headers["page"][1] == "no-store"
            assert headers["static"][0] == headers["page"][0]
            assert "no-store" not in (headers["static"][1] or "")

            # The policy is enforced: an injected inline script is blocked and reported.
            assert await page.evaluate(INJECT)
            blocked = await _violations(page)
            assert await page.evaluate("window.__ran === undefined")
            assert any(v.startswith("script-src") for v in blocked), blocked

            case = await page.evaluate(
                'document.querySelector(\'a[href^="/cases/"]:not([href="/cases/new/"])'
                ":not([href=\"/cases/break-glass/\"])').getAttribute('href')"
            )
            live = "document.querySelector('#live-state')?.textContent === 'live'"
            await _visit(page, base + case, live, seen)
            documents = f"{base}{case}documents/"
            await _visit(page, documents, live, seen)
            await _choose_file(page, pdf)
            await page.wait_for(
                f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready'", timeout=90
            )
            seen["upload"] = await _violations(page)
            detail = await page.evaluate(f"{ROW}.querySelector('a').getAttribute('href')")
            # Page images come from our API (img-src 'self') and are drawn.
            await _visit(
                page,
                base + detail,
                "[...document.images].some((i) => i.complete && i.naturalWidth > 0)",
                seen,
            )
            await _visit(
                page, f"{base}{case}search/?q=brief", "document.readyState === 'complete'", seen
            )
            await _visit(
                page, f"{base}{case}bates/?ref=X1", "document.readyState === 'complete'", seen
            )
            # The draft pages (the version page is walked by tests/e2e/test_draft_view.py).
            await _visit(
                page, f"{base}{case}drafts/", "!!document.querySelector('.drafts-page')", seen
            )
            await _visit(
                page, f"{base}{case}drafts/new/", "!!document.querySelector('#id_packet')", seen
            )
            await _visit(page, f"{base}/cluster/", live, seen)
            await _visit(page, f"{base}/accounts/tokens/", "!!document.querySelector('form')", seen)
            await _visit(page, f"{base}/cases/new/", "!!document.querySelector('form')", seen)
            await _visit(
                page, f"{base}/cases/break-glass/", "!!document.querySelector('form')", seen
            )
            await _visit(
                page, f"{base}/cases/987654321/", "document.readyState === 'complete'", seen
            )

            # The admin: its scripts run (the inline "Add another" rows, the theme toggle).
            await _visit(page, f"{base}/admin/", "!!document.querySelector('#content')", seen)
            await _visit(
                page,
                f"{base}/admin/cluster/host/add/",
                "!!document.querySelector('.add-row a')",
                seen,
            )
            await _visit(
                page,
                f"{base}/admin/cluster/backend/",
                "!!document.querySelector('#changelist')",
                seen,
            )
            await _visit(
                page,
                f"{base}/admin/accounts/auditevent/",
                "!!document.querySelector('#changelist')",
                seen,
            )
            await _visit(
                page,
                f"{base}/admin/procrastinate/procrastinatejob/",
                "!!document.querySelector('#result_list a')",
                seen,
            )
            job = await page.evaluate(
                "document.querySelector('#result_list a').getAttribute('href')"
            )
            await _visit(page, base + job, "!!document.querySelector('#content-main')", seen)
            await _visit(
                page, f"{base}/admin/accounts/user/add/", "!!document.querySelector('form')", seen
            )
            # The API docs: Swagger UI renders the operations.
            await _visit(
                page,
                f"{base}/api/v1/docs",
                "document.querySelectorAll('.swagger-ui .opblock').length > 10",
                seen,
            )
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)

    violations = {url: found for url, found in seen.items() if found}
    assert violations == {}, json.dumps(violations, indent=2)
    assert server.returncode == 0
