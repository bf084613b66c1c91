"""Steps the browser tests share: making the files they upload, choosing them in the upload
form, finding a row of the documents list, calling the API as the signed-in page does."""

import json
import re
from pathlib import Path
from typing import Any

import pymupdf
from playwright.async_api import Page

from tests.harness.browser import arrive, csp_violations, goto, shot, sign_in, wait_for
from tests.harness.product import Account, Product

ROWS = "document.querySelectorAll('#document-rows tr')"
VIEWER_IMAGE = "document.querySelector('#viewer-image')"


def row(filename: str) -> str:
    """A JS expression: the documents list's row of `filename` (undefined while there is none)."""
    return (
        f"[...{ROWS}].find(r => r.querySelector('[data-field=filename]')?.textContent === "
        f"{filename!r})"
    )


def write_pdf(path: Path, pages: list[str], *, fontsize: float = 11) -> Path:
    """A PDF with a text layer: one page per item, or the lines of an item (a list) on one."""
    with pymupdf.open() as pdf:
        for text in pages:
            page = pdf.new_page()
            for n, line in enumerate(text.split("\n")):
                page.insert_text((72, 72 + (fontsize + 5) * n), line, fontsize=fontsize)
        pdf.save(path)
    return path


async def choose_files(page: Page, *paths: Path) -> None:
    """Set the upload form's file input as a person choosing files would, then press Upload
    (which sends nothing more if choosing the files already started their upload)."""
    await page.set_input_files("input[name=files]", [str(path) for path in paths])
    await page.evaluate("document.querySelector('form[data-upload-api]').requestSubmit()")


async def wait_ready(page: Page, filename: str, *, timeout: float = 90) -> None:
    """Wait for the documents list to show `filename` read (status Ready), live."""
    await wait_for(
        page,
        f"{row(filename)}?.querySelector('[data-field=status]').textContent === 'Ready'",
        timeout,
    )


async def upload_rendered(
    page: Page, product: Product, path: Path, *, timeout: float
) -> tuple[str, int]:
    """Upload `path` to a new case as the admin, wait for it to be read and for its rendering
    to PDF (a job of its own, after the text) to have a page 2, then open the viewer at page 1
    with its image drawn: (the viewer's path, the document's id)."""
    case = product.new_case()
    await sign_in(page, product.admin)
    await goto(page, f"{case.path}documents/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await choose_files(page, path)
    await wait_ready(page, path.name, timeout=timeout)
    viewer = await page.evaluate(
        f"{row(path.name)}.querySelector('[data-field=filename]').getAttribute('href')"
    )
    document_id = int(viewer.strip("/").split("/")[-1])
    image = f"/api/v1/cases/{case.id}/documents/{document_id}/pages/2/image?thumb=1"
    await wait_for(page, f"fetch({image!r}).then(r => r.ok)", 2 * timeout)
    await goto(page, f"{viewer}?page=1")
    await wait_for(page, f"{VIEWER_IMAGE}?.complete && {VIEWER_IMAGE}.naturalWidth > 0")
    return viewer, document_id


async def api(page: Page, method: str, path: str, body: object | None = None) -> dict[str, Any]:
    """Call the API as the signed-in browser does (its session and the page's CSRF token):
    {status, body}."""
    script = (
        "(async () => { const token = document.querySelector('[name=csrfmiddlewaretoken]')"
        "?.value || '';"
        f"const r = await fetch({path!r}, {{method: {method!r}, credentials: 'same-origin',"
        "headers: {'Content-Type': 'application/json', 'X-CSRFToken': token},"
        f"body: {json.dumps(json.dumps(body)) if body is not None else 'undefined'}}});"
        "return {status: r.status, body: await r.json()}; })()"
    )
    result: dict[str, Any] = await page.evaluate(script)
    return result


class Visits:
    """Pages a test goes through, each opened or submitted to as a person would, checked (axe)
    on arrival, with what the page's CSP listener heard there (`listen_for_csp` first)."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}  # address: CSP violations there

    async def note(self, page: Page) -> None:
        self.seen[page.url] = await csp_violations(page)

    async def go(self, page: Page, url: str) -> None:
        await goto(page, url)
        await self.note(page)

    async def submit(
        self, page: Page, form: str, fields: dict[str, str], *, button: str = ""
    ) -> None:
        """Fill the form's fields as typed text, submit it (with `button` when given) and wait
        for the next page to have loaded."""
        async with page.expect_navigation(timeout=60_000):
            await page.evaluate(
                f"""(() => {{
                  const form = document.querySelector({json.dumps(form)});
                  for (const [name, value] of Object.entries({json.dumps(fields)})) {{
                    const field = form.querySelector(`[name="${{name}}"]`);
                    field.value = value;
                    field.dispatchEvent(new Event('input', {{bubbles: true}}));
                  }}
                  const button = {json.dumps(button)}
                    ? form.querySelector({json.dumps(button or "x")}) : null;
                  form.requestSubmit(button);
                }})()"""
            )
        await arrive(page)
        await self.note(page)

    def violations(self) -> dict[str, list[str]]:
        return {url: found for url, found in self.seen.items() if found}


async def frozen_packet_of(
    page: Page, visits: Visits, case_path: str, pdf: Path, *, title: str, reason: str
) -> None:
    """The record as a person makes it: `pdf` uploaded on the documents page and read by the
    worker (its row turns ready and its provenance clear, live), put in a new packet `title`
    with `reason`, and the packet frozen."""
    await visits.go(page, f"{case_path}documents/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await choose_files(page, pdf)
    await wait_ready(page, pdf.name, timeout=120)
    await wait_for(
        page,
        f"{row(pdf.name)}.querySelector('[data-field=provenance]').dataset.provenance === 'clear'",
    )
    await visits.go(page, f"{case_path}packets/")
    await visits.submit(page, f'form[action="{case_path}packets/"]', {"title": title})
    document = await page.evaluate(
        "[...document.querySelectorAll('#id_document option')]"
        f".find((o) => o.textContent.startsWith({pdf.name!r})).value"
    )
    await visits.submit(page, 'form[action$="/items/"]', {"document": document, "reason": reason})
    freeze = await page.get_attribute('a[href$="/freeze/"]', "href")
    assert freeze
    await visits.go(page, freeze)
    await visits.submit(page, 'form[action$="/freeze/"]', {})
    assert "Frozen" in await page.evaluate("document.body.textContent")


# Resolves once a health check of the cluster's backends has run since it was called (they run
# every 30 s), false after `timeout` ms: what a person refused for want of a healthy deployment
# waits for before trying again.
NEXT_HEALTH_CHECK = """
async (timeout) => {
  const states = async () => {
    const status = await (await fetch('/api/v1/cluster/status')).json();
    return JSON.stringify(status.backends.map((b) => [b.id, b.state, b.checked_at]));
  };
  const before = await states();
  for (const end = Date.now() + timeout; Date.now() < end; ) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if ((await states()) !== before) return true;
  }
  return false;
}
"""


async def start_run(
    page: Page, visits: "Visits", runs: str, *, packet: str, kind: str, instructions: str
) -> list[str]:
    """Start a run of `kind` on the frozen packet titled `packet` from the case's New run form
    (`runs` is the Runs tab's path), as a person would: until the first health checks of the
    demo's backends have run, the form may refuse it, and the person tries again after the
    next check. Ends on the run's page; returns the refusals seen on the way."""
    refusals: list[str] = []
    for _attempt in range(6):
        await visits.go(page, f"{runs}new/")
        value = await page.evaluate(
            "(title) => [...document.querySelectorAll('#id_packet option')]"
            ".find((o) => o.textContent.startsWith(title)).value",
            packet,
        )
        await visits.submit(
            page,
            f'form[action="{runs}new/"]',
            {"kind": kind, "packet": value, "instructions": instructions},
        )
        if await page.evaluate(r"/\/runs\/\d+\/$/.test(location.pathname)"):
            return refusals
        refusals.append(
            await page.evaluate(
                "[...document.querySelectorAll('.alert, .errorlist')].map((e) => "
                "e.textContent.trim()).join(' / ')"
            )
        )
        assert await page.evaluate(NEXT_HEALTH_CHECK, 45_000), "no health check ran in 45 s"
    raise AssertionError(f"the run was refused every time: {refusals}")


async def person_create(page: Page, person: Account, *, password: str = "", snap: str = "") -> str:
    """The admin signed in on `page` creates `person` on the People page (its role, and
    `password` or none: the person then needs a sign-in link); a screenshot `snap` of the
    filled form if named. The new person's page address."""
    await page.click('nav a[href="/accounts/people/"]')
    await arrive(page, re.compile(r"/accounts/people/$"))
    await page.fill("#id_full_name", person.full_name)
    await page.fill("#id_email", person.email)
    await page.select_option("#id_role", person.role)
    if password:
        await page.fill("#id_password", password)
        await page.fill("#id_again", password)
    if snap:
        await shot(page, snap)
    async with page.expect_navigation():
        await page.click("form[data-people-create] button[type=submit]")
    await arrive(page, re.compile(r"/accounts/people/\d+/$"))
    return page.url
