"""A real browser against a real `make run` (web, the `cpu` worker, the case stream): a record
PDF is uploaded and read, put in a packet and frozen; a lawyer pastes a draft against that
packet and presses Verify; the worker checks it and the page follows the run live. Then the
version page is read as a person would: every claim highlighted with an icon and a status
label, a click on a claim opens its finding with the page image and the matched words boxed,
the filters narrow the claims, the lawyer overrides the blocking finding with a reason and
approves the version.

Screenshots of each step are saved as test artifacts.
"""

import base64
import io
import secrets
from pathlib import Path
from typing import Any

import docx
import pymupdf
import pytest
from docx.enum.text import WD_ALIGN_PARAGRAPH
from playwright.async_api import Page

from tests.e2e.steps import Visits, frozen_packet_of, write_pdf
from tests.harness.browser import arrive, listen_for_csp, shot, sign_in, wait_for
from tests.harness.product import Account, Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FILENAME = "e2e-brief.pdf"
RECORD = ["The tenant paid $12,450.00 on March 3, 2024.", "Signed at Springfield."]
DRAFT = "The tenant paid USD 12,450 on 03/03/2024. The landlord then paid $99.00 on June 9, 2021."
LAWYER_PASSWORD = "E2e-lawyer-password-1"
REASON = "The receipt for $99.00 is in the client's file; checked by hand."
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


async def export(page: Page, fmt: str) -> dict[str, Any]:
    """Press the version's Export button of `fmt` as the signed-in page does, by fetch (a
    download would leave the page): {status, type, data (base64)}."""
    result: dict[str, Any] = await page.evaluate(
        """async (fmt) => {
          const form = document.querySelector('#exports form');
          const body = new FormData(form);
          body.append('format', fmt);
          const r = await fetch(form.action, {method: 'POST', body, credentials: 'same-origin'});
          let text = '';
          for (const byte of new Uint8Array(await r.arrayBuffer())) {
            text += String.fromCharCode(byte);
          }
          return {status: r.status, type: r.headers.get('content-type'), data: btoa(text)};
        }""",
        fmt,
    )
    return result


async def test_a_lawyer_verifies_a_draft_reads_its_findings_overrides_and_approves(
    page: Page, product: Product, tmp_path: Path
) -> None:
    pdf = write_pdf(tmp_path / FILENAME, ["\n".join(RECORD)], fontsize=11)
    case = product.new_case()
    lawyer = Account(
        f"e2e.lawyer.{secrets.token_hex(4)}@firm.test", LAWYER_PASSWORD, "Erin Lawyer", "lawyer"
    )
    visits = Visits()
    await listen_for_csp(page)
    await sign_in(page, product.admin)

    # The admin makes a lawyer account, and the case's lawyer puts it on the case as a lawyer.
    await visits.go(page, "/admin/accounts/user/add/")
    await visits.submit(
        page,
        "#user_form",
        {
            "email": lawyer.email,
            "full_name": lawyer.full_name,
            "role": "lawyer",
            "password": lawyer.password,
        },
        button="[name=_save]",
    )
    await visits.go(page, case.path)
    await frozen_packet_of(
        page, visits, case.path, pdf, title="Lease record", reason="The payment record"
    )
    async with page.expect_navigation():
        await page.evaluate(
            "document.querySelector('form[action=\"/accounts/logout/\"]').requestSubmit()"
        )
    await arrive(page)

    # The case's lawyer adds the new lawyer on the case page's members form.
    await sign_in(page, case.lawyer)
    await visits.go(page, case.path)
    await visits.submit(
        page, f'form[action="{case.path}members/"]', {"email": lawyer.email, "role": "lawyer"}
    )
    assert lawyer.email in await page.evaluate("document.body.textContent")
    async with page.expect_navigation():
        await page.evaluate(
            "document.querySelector('form[action=\"/accounts/logout/\"]').requestSubmit()"
        )
    await arrive(page)
    await wait_for(page, "!!document.querySelector('#id_username')")

    # The lawyer pastes the draft against the frozen packet.
    await visits.submit(
        page, "form[method=post]", {"username": lawyer.email, "password": lawyer.password}
    )
    await visits.go(page, case.path)
    drafts = await page.get_attribute('.case-nav a[href$="/drafts/"]', "href")
    assert drafts
    await visits.go(page, drafts)
    await visits.go(page, f"{drafts}new/")
    packet = await page.evaluate(
        "[...document.querySelectorAll('#id_packet option')]"
        ".find((o) => o.textContent.startsWith('Lease record')).value"
    )
    await shot(page, "1-new")
    await visits.submit(
        page,
        f'form[action="{drafts}new/"]',
        {"title": "Motion to compel", "kind": "motion", "packet": packet, "text": DRAFT},
    )
    assert await page.evaluate("location.pathname.endsWith('/versions/1/')")
    version_path = await page.evaluate("location.pathname")

    # Verify: the worker runs the job and the page follows it, then shows the findings.
    await visits.submit(page, 'form[action$="/verify/"]', {})
    await wait_for(page, "!!document.querySelector('#draft-text a.claim')", 120)
    await arrive(page)  # the page as it shows the findings
    await shot(page, "2-verified")
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
    icons = {"supported": "✓", "unsupported": "✗", "contradicted": "≠", "needs_review": "?"}
    for claim in claims:
        assert claim["icon"] == icons[claim["state"]], claim
        assert claim["hidden"] == "true", claim
        assert claim["label"].startswith("["), claim  # "[Supported, amount] "
    states = {c["state"] for c in claims}
    assert "supported" in states and states & {"unsupported", "contradicted"}, states
    assert "Not obtained" in (await page.text_content("#second-opinion") or "")
    assert await page.evaluate("document.querySelector('#approve-button').disabled")

    # A click on a supported claim opens its finding: the page image, the words boxed.
    supported = next(c for c in claims if c["state"] == "supported")
    await page.evaluate("window.__samePage = true")
    await page.click(f"#claim-{supported['id']}")
    opened = f"document.querySelector('#finding-panel')?.dataset.finding === {supported['id']!r}"
    await wait_for(page, opened)
    await wait_for(
        page,
        "(() => { const svg = document.querySelector('#finding-panel svg');"
        " if (!svg) return false; const img = svg.querySelector('image');"
        " return img && img.getBBox().width > 0 && svg.querySelectorAll("
        "'rect.match-box').length > 0; })()",
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
    await arrive(page)  # the page with its finding open
    await shot(page, "3-finding")

    # Filters: only the blocking claims.
    await visits.go(page, f"{version_path}?status=unsupported&status=contradicted")
    shown = await page.evaluate(
        "[...document.querySelectorAll('#draft-text a.claim[id^=\"claim-\"]')]"
        ".map((a) => [...a.classList].find((c) => c.startsWith('claim--')).slice(7))"
    )
    assert shown and set(shown) <= {"unsupported", "contradicted"}, shown
    await shot(page, "4-filtered")

    # The lawyer overrides each blocking finding with a reason, then approves.
    blocking = [c for c in claims if c["state"] in ("unsupported", "contradicted")]
    for claim in blocking:
        await visits.go(page, f"{version_path}?finding={claim['id']}")
        await visits.submit(page, "form.override-form", {"reason": REASON})
        assert "Overridden by Erin Lawyer" in (await page.text_content("#finding-panel") or "")
    await shot(page, "5-overridden")
    overridden = await page.evaluate(
        "[...document.querySelectorAll('#draft-text a.claim--overridden[id^=\"claim-\"]')]"
        ".map((a) => [a.dataset.finding, a.querySelector('.claim__icon').textContent])"
    )
    assert sorted(overridden) == sorted([c["id"], "✎"] for c in blocking)
    assert not await page.evaluate("document.querySelector('#approve-button').disabled")
    await visits.submit(page, 'form[action$="/approve/"]', {})
    assert "Approved by Erin Lawyer" in (await page.text_content("#approval") or "")
    await shot(page, "6-approved")
    await visits.note(page)

    # A person's version says so in words (issue 25 req 6): pasted, not "Markdown (pasted)".
    written = await page.text_content("[data-written-by]") or ""
    assert written.strip() == "Pasted", written

    # Its PDF export opens with the case's caption and numbers its pages (issue 25 req 6).
    exported = await export(page, "pdf")
    assert exported["status"] == 200 and exported["type"] == "application/pdf", exported["status"]
    with pymupdf.open(stream=base64.b64decode(exported["data"]), filetype="pdf") as pdf:
        first, pages = pdf[0].get_text(), pdf.page_count
    head = [line for line in first.split("The tenant")[0].splitlines() if line.strip()]
    assert head[-3:] == [case.title, f"Case No. {case.number}", "Motion to compel v1"], head
    assert f"Case No. {case.number} · Page 1 of {pages}" in first

    # So does its DOCX export: the caption centred at its top, the case number and a page
    # number field (Word fills it in) in every page's footer.
    exported = await export(page, "docx")
    assert exported["status"] == 200 and exported["type"] == DOCX, exported["status"]
    document = docx.Document(io.BytesIO(base64.b64decode(exported["data"])))
    paragraphs = [(p.text, p.alignment) for p in document.paragraphs]
    top = paragraphs[: [text for text, _ in paragraphs].index(case.title) + 3]
    centre = WD_ALIGN_PARAGRAPH.CENTER
    assert top[-3:] == [
        (case.title, centre),
        (f"Case No. {case.number}", centre),
        ("Motion to compel v1", centre),
    ], top
    assert all(alignment == centre for _, alignment in top), top
    footer = document.sections[0].footer.paragraphs[0]._p.xml
    assert f"Case No. {case.number} · Page " in footer and 'w:instr="PAGE"' in footer
    assert "The tenant paid" in "\n".join(text for text, _ in paragraphs)

    assert len(visits.seen) > 10
    assert visits.violations() == {}
