"""Issue 25 req 6 in a real browser against a real `make run`: the admin's pages that showed the
product's stored codes say them in words. An audit event's page is titled by what happened
("… signed in", not "… auth.login"); the job list, a job's page and the job queues page say each
job's task, status, arguments and history in words ("Check the backends' health", "Succeeded",
not "cluster.health_check", "succeeded" and JSON). Each page is checked with axe-core and
for content security policy violations; screenshots are kept as artifacts."""

import re

import pytest
from playwright.async_api import Page

from apps.operations import job_words
from tests.harness.browser import (
    arrive,
    csp_violations,
    goto,
    listen_for_csp,
    shot,
    sign_in,
    wait_for,
)
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

JOBS = "/admin/procrastinate/procrastinatejob/"


def cells(field: str) -> str:
    return (
        f"[...document.querySelectorAll('#result_list td.field-{field}')]"
        ".map(td => td.textContent.trim())"
    )


async def test_the_audit_log_and_the_job_pages_say_codes_in_words(
    page: Page, product: Product
) -> None:
    await listen_for_csp(page)
    await sign_in(page, product.admin)

    # The latest sign-in, found by its code; its page is titled in words.
    await goto(page, "/admin/accounts/auditevent/?action=auth.login")
    async with page.expect_navigation():
        await page.click("#result_list tbody tr th a")
    await arrive(page, re.compile(r"/admin/accounts/auditevent/\d+/change/"))
    heading = (await page.text_content("#content h2") or "").strip()
    assert re.fullmatch(r"[\d-]+ [\d:]+ \S+ signed in", heading), heading
    title = await page.title()
    assert title.startswith(heading) and "auth.login" not in title, title
    assert "auth.login" not in (await page.text_content(".breadcrumbs") or "")
    assert "auth.login" in (await page.text_content(".field-action_code") or "")
    await shot(page, "audit-event")

    # The job list: the demo's periodic jobs ran, at least the backends' health check.
    for _attempt in range(60):
        await goto(page, JOBS)
        if await page.evaluate(f"{cells('task')}.length"):
            break
        await page.wait_for_timeout(1000)
    tasks = await page.evaluate(cells("task"))
    statuses = await page.evaluate(cells("job_status"))
    assert tasks and set(tasks) <= set(job_words.TASK_WORDS.values()), tasks
    assert set(statuses) <= set(job_words.STATUS_WORDS.values()), statuses
    arguments = await page.evaluate(cells("arguments"))
    assert not [a for a in arguments if "{" in a or '"' in a], arguments
    events = await page.evaluate(cells("last_event"))
    words = tuple(job_words.EVENT_WORDS.values())
    assert events and all(e.startswith(words) for e in events if e), events
    sidebar = await page.text_content("#changelist-filter") or ""
    assert "Failed for good" in sidebar and "Check the backends' health" in sidebar, sidebar
    for code in ("todo", "doing", "cluster.health_check", "deferred"):
        assert code not in sidebar, code
    assert await csp_violations(page) == []
    await shot(page, "job-list")

    # A job of the health check: its page titled in words, its history in words.
    await goto(page, f"{JOBS}?task_name=cluster.health_check")
    async with page.expect_navigation():
        await page.click("#result_list tbody tr th a")
    await arrive(page, re.compile(r"/procrastinatejob/\d+/change/"))
    heading = (await page.text_content("#content h2") or "").strip()
    assert re.fullmatch(r"Job \d+: Check the backends' health", heading), heading
    assert "ProcrastinateJob object" not in (await page.text_content("body") or "")
    history = await page.evaluate(
        "[...document.querySelectorAll('.field-history .readonly div')]"
        ".map(d => d.textContent.trim())"
    )
    assert history and all(re.fullmatch(r"[\d-]+ [\d:]+: [A-Z].*", h) for h in history), history
    assert history[0].endswith(": Queued"), history
    assert "Scheduled for: " in (await page.text_content(".field-arguments") or "")
    assert await csp_violations(page) == []
    await shot(page, "job-page")
    async with page.expect_navigation():
        await page.click("a.historylink")
    await arrive(page, re.compile(r"/procrastinatejob/\d+/history/"))
    assert (await page.text_content("h1") or "").strip() == f"Change history: {heading}"
    assert heading in (await page.text_content(".breadcrumbs") or "")

    # The job queues page names the periodic jobs' tasks in words, their names below.
    await goto(page, f"{JOBS}queues/")
    await wait_for(page, "!!document.querySelector('#periodic-jobs')")
    first = await page.evaluate(
        "[...document.querySelectorAll('#periodic-jobs tbody tr td:first-child')]"
        ".map(td => td.textContent.trim())"
    )
    assert any(cell.startswith("Check the backends' health") for cell in first), first
    assert await csp_violations(page) == []
    await shot(page, "job-queues")
