"""A real browser against a real `make run` (web, the `cpu` worker, the case stream): a record
PDF is uploaded and read, put in a packet and frozen; a lawyer pastes a draft against that
packet and presses Verify; the worker checks it and the page follows the run live. Then the
version page is read as a person would: every claim highlighted with an icon and a status
label, a click on a claim opens its finding with the page image and the matched words boxed,
the filters narrow the claims, the lawyer overrides the blocking finding with a reason and
approves the version.

Screenshots of each step are saved as test artifacts: under $LEXWEB_E2E_SCREENSHOTS when set
(CI uploads that folder), else under the test's own temporary folder (pytest's --basetemp),
and the test prints where they are.
"""

import base64
import json
import os
import signal
from pathlib import Path

import pymupdf
import pytest

from tests.e2e.cdp import Page, browser_page, chromium_path
from tests.e2e.test_csp_browser import LISTEN, _violations
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

FILENAME = "e2e-brief.pdf"  # the name ROW of the documents test looks for
RECORD = ["The tenant paid $12,450.00 on March 3, 2024.", "Signed at Springfield."]
DRAFT = "The tenant paid USD 12,450 on 03/03/2024. The landlord then paid $99.00 on June 9, 2021."
LAWYER = "e2e.lawyer@firm.test"
LAWYER_PASSWORD = "E2e-lawyer-password-1"
REASON = "The receipt for $99.00 is in the client's file; checked by hand."


def _write_record(path: Path) -> None:
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        for n, line in enumerate(RECORD):
            page.insert_text((72, 72 + 16 * n), line, fontsize=11)
        pdf.save(path)


def _screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("LEXWEB_E2E_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def _shot(page: Page, folder: Path, name: str) -> None:
    shot = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    (folder / f"draft-view-{name}.png").write_bytes(base64.b64decode(shot["data"]))


# What the policy reported on every page the test saw: {url: violations}.
SEEN: dict[str, list[str]] = {}


async def _note(page: Page) -> None:
    SEEN[await page.evaluate("location.href")] = await _violations(page)


async def _submit(page: Page, form: str, fields: dict[str, str], *, button: str = "") -> None:
    """Fill the form's fields as typed text, submit it (with `button` when given) and wait for
    the next page to have loaded."""
    await page.evaluate(
        f"""(() => {{
          const form = document.querySelector({json.dumps(form)});
          for (const [name, value] of Object.entries({json.dumps(fields)})) {{
            const field = form.querySelector(`[name="${{name}}"]`);
            field.value = value;
            field.dispatchEvent(new Event('input', {{bubbles: true}}));
          }}
          window.__leaving = true;
          const button = {json.dumps(button)} ? form.querySelector({json.dumps(button or "x")})
            : null;
          form.requestSubmit(button);
        }})()"""
    )
    await page.wait_for("!window.__leaving && document.readyState === 'complete'", timeout=60)
    await _note(page)


async def _go(page: Page, url: str) -> None:
    await page.evaluate("window.__leaving = true")
    await page.goto(url)
    await page.wait_for("!window.__leaving && document.readyState === 'complete'", timeout=30)
    await _note(page)


async def test_a_lawyer_verifies_a_draft_reads_its_findings_overrides_and_approves(
    var_dir: Path, tmp_path: Path
) -> None:
    pdf = tmp_path / FILENAME
    _write_record(pdf)
    shots = _screenshots(tmp_path)
    port = free_port()
    server = launch(["run"], launcher_env(var_dir, port))
    base = f"http://127.0.0.1:{port}"
    SEEN.clear()
    try:
        read_until(server, "Starting worker", "running at")
        async with browser_page() as page:
            await page.call("Page.addScriptToEvaluateOnNewDocument", source=LISTEN)
            await _sign_in(page, base)
            case = await page.evaluate(
                'document.querySelector(\'a[href^="/cases/"]:not([href="/cases/new/"])'
                ":not([href=\"/cases/break-glass/\"])').getAttribute('href')"
            )

            # The admin makes a lawyer account and puts it on the case as a lawyer.
            await _go(page, f"{base}/admin/accounts/user/add/")
            await _submit(
                page,
                "#user_form",
                {
                    "email": LAWYER,
                    "full_name": "Erin Lawyer",
                    "role": "lawyer",
                    "password": LAWYER_PASSWORD,
                },
                button="[name=_save]",
            )
            await _go(page, base + case)
            await _submit(
                page, f'form[action="{case}members/"]', {"email": LAWYER, "role": "lawyer"}
            )
            assert LAWYER in await page.evaluate("document.body.textContent")

            # The record: uploaded and read by the worker, put in a packet, frozen.
            await _go(page, f"{base}{case}documents/")
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await _choose_file(page, pdf)
            await page.wait_for(
                f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready' && "
                f"{ROW}.querySelector('[data-field=provenance]').dataset.provenance === 'clear'",
                timeout=120,
            )
            await _go(page, f"{base}{case}packets/")
            await _submit(page, f'form[action="{case}packets/"]', {"title": "Lease record"})
            document = await page.evaluate(
                "[...document.querySelectorAll('#id_document option')]"
                f".find((o) => o.textContent.startsWith({FILENAME!r})).value"
            )
            await _submit(
                page,
                'form[action$="/items/"]',
                {"document": document, "reason": "The payment record"},
            )
            freeze = await page.evaluate(
                "document.querySelector('a[href$=\"/freeze/\"]').getAttribute('href')"
            )
            await _go(page, base + freeze)
            await _submit(page, 'form[action$="/freeze/"]', {})
            assert "Frozen" in await page.evaluate("document.body.textContent")
            await page.evaluate(
                "document.querySelector('form[action=\"/accounts/logout/\"]').requestSubmit();"
                "window.__leaving = true"
            )
            await page.wait_for("!window.__leaving && !!document.querySelector('#id_username')", 30)

            # The lawyer pastes the draft against the frozen packet.
            await _submit(
                page,
                "form[method=post]",
                {"username": LAWYER, "password": LAWYER_PASSWORD},
            )
            await _go(page, base + case)
            drafts = await page.evaluate(
                "document.querySelector('.case-nav a[href$=\"/drafts/\"]').getAttribute('href')"
            )
            await _go(page, base + drafts)
            await _go(page, f"{base}{drafts}new/")
            packet = await page.evaluate(
                "[...document.querySelectorAll('#id_packet option')]"
                ".find((o) => o.textContent.startsWith('Lease record')).value"
            )
            await _shot(page, shots, "1-new")
            await _submit(
                page,
                f'form[action="{drafts}new/"]',
                {"title": "Motion to compel", "kind": "motion", "packet": packet, "text": DRAFT},
            )
            assert await page.evaluate("location.pathname.endsWith('/versions/1/')")
            version_path = await page.evaluate("location.pathname")

            # Verify: the worker runs the job and the page follows it, then shows the findings.
            await _submit(page, 'form[action$="/verify/"]', {})
            await page.wait_for("!!document.querySelector('#draft-text a.claim')", timeout=120)
            await _shot(page, shots, "2-verified")
            claims = await page.evaluate(
                """[...document.querySelectorAll('#draft-text a.claim[id^="claim-"]')].map((a) => ({
                  state: [...a.classList].find((c) => c.startsWith('claim--')).slice(7),
                  icon: a.querySelector('.claim__icon')?.textContent,
                  hidden: a.querySelector('.claim__icon')?.getAttribute('aria-hidden'),
                  label: a.querySelector('.visually-hidden')?.textContent,
                  text: a.textContent,
                  id: a.dataset.finding,
                }))"""
            )
            assert len(claims) >= 4, claims
            icons = {
                "supported": "✓",
                "unsupported": "✗",
                "contradicted": "≠",
                "needs_review": "?",
            }
            for claim in claims:
                assert claim["icon"] == icons[claim["state"]], claim
                assert claim["hidden"] == "true", claim
                assert claim["label"].startswith("["), claim  # "[Supported, amount] "
            states = {c["state"] for c in claims}
            assert "supported" in states and states & {"unsupported", "contradicted"}, states
            assert "Not obtained" in await page.evaluate(
                "document.querySelector('#second-opinion').textContent"
            )
            assert await page.evaluate("document.querySelector('#approve-button').disabled")

            # A click on a supported claim opens its finding: the page image, the words boxed.
            supported = next(c for c in claims if c["state"] == "supported")
            await page.evaluate(
                f"document.querySelector('#claim-{supported['id']}').click();"
                "window.__samePage = true"
            )
            opened = (
                f"document.querySelector('#finding-panel')?.dataset.finding === {supported['id']!r}"
            )
            await page.wait_for(opened, timeout=30)
            await page.wait_for(
                "(() => { const svg = document.querySelector('#finding-panel svg');"
                " if (!svg) return false; const img = svg.querySelector('image');"
                " return img && img.getBBox().width > 0 && svg.querySelectorAll("
                "'rect.match-box').length > 0; })()",
                timeout=30,
            )
            figure = await page.evaluate(
                """(async () => {
                  const svg = document.querySelector('#finding-panel svg');
                  const href = svg.querySelector('image').getAttribute('href');
                  const response = await fetch(href, {credentials: 'same-origin'});
                  const box = svg.querySelector('rect.match-box').getBoundingClientRect();
                  const page = svg.getBoundingClientRect();
                  return {status: response.status, type: response.headers.get('content-type'),
                          inside: box.left >= page.left && box.right <= page.right &&
                                  box.top >= page.top && box.bottom <= page.bottom,
                          size: box.width * box.height};
                })()"""
            )
            assert figure["status"] == 200 and figure["type"] == "image/png", figure
            assert figure["inside"] and figure["size"] > 0, figure
            assert await page.evaluate("window.__samePage === true")  # opened in place
            await _shot(page, shots, "3-finding")

            # Filters: only the blocking claims.
            await _go(page, f"{base}{version_path}?status=unsupported&status=contradicted")
            shown = await page.evaluate(
                "[...document.querySelectorAll('#draft-text a.claim[id^=\"claim-\"]')]"
                ".map((a) => [...a.classList].find((c) => c.startsWith('claim--')).slice(7))"
            )
            assert shown and set(shown) <= {"unsupported", "contradicted"}, shown
            await _shot(page, shots, "4-filtered")

            # The lawyer overrides each blocking finding with a reason, then approves.
            blocking = [c for c in claims if c["state"] in ("unsupported", "contradicted")]
            for claim in blocking:
                await _go(page, f"{base}{version_path}?finding={claim['id']}")
                await _submit(page, "form.override-form", {"reason": REASON})
                assert "Overridden by Erin Lawyer" in await page.evaluate(
                    "document.querySelector('#finding-panel').textContent"
                )
            await _shot(page, shots, "5-overridden")
            overridden = await page.evaluate(
                "[...document.querySelectorAll('#draft-text a.claim--overridden[id^=\"claim-\"]')]"
                ".map((a) => [a.dataset.finding, a.querySelector('.claim__icon').textContent])"
            )
            assert sorted(overridden) == sorted([c["id"], "✎"] for c in blocking)
            assert not await page.evaluate("document.querySelector('#approve-button').disabled")
            await _submit(page, 'form[action$="/approve/"]', {})
            assert "Approved by Erin Lawyer" in await page.evaluate(
                "document.querySelector('#approval').textContent"
            )
            await _shot(page, shots, "6-approved")
            await _note(page)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    print(f"screenshots: {shots}")  # noqa: T201
    assert len(SEEN) > 10
    assert {url: found for url, found in SEEN.items() if found} == {}
    assert server.returncode == 0
