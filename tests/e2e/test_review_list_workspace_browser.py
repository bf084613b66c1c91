"""A real browser against a real `make run` (issue 25 req. 2, the review list): the list as a
workspace. At 1366x768 the first row is on screen without scrolling and every default column is
within the window's width; at 820 px wide the page does not scroll sideways (the table scrolls in
its own box). The filters are a pane, closed until a filter is active; the bulk actions are a
toolbar that appears with a selection, each action a dialog with only its fields; tagging asks
no confirmation, withdrawing does. The column chooser hides a column and the choice survives a
reload. Every state is checked with axe and breaks no rule of the content security policy;
screenshots are saved as artifacts."""

from pathlib import Path

import pytest
from playwright.async_api import Dialog, Page

from tests.e2e.steps import ROWS, choose_files, row, wait_ready, write_pdf
from tests.harness.browser import (
    arrive,
    check,
    csp_violations,
    goto,
    listen_for_csp,
    shot,
    sign_in,
    wait_for,
)
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

NAMES = [f"e2e-list-workspace-{n}.pdf" for n in (1, 2, 3)]
TOOLBAR = "document.querySelector('[data-bulk-toolbar]')"
DIALOG = "document.querySelector('dialog.bulk-dialog[open]')"
SIDEWAYS = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
WIDTHS = "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
# The headers shown (not hidden by the chooser): their column name, left and right edges.
SHOWN_COLUMNS = """[...document.querySelectorAll('.documents-table thead th')]
  .filter((th) => getComputedStyle(th).display !== 'none')
  .map((th) => { const r = th.getBoundingClientRect();
    return {col: th.dataset.col || th.textContent.trim(), left: r.left, right: r.right}; })"""


async def toolbar_shown(page: Page) -> bool:
    return bool(await page.evaluate(f"!{TOOLBAR}.hidden && {TOOLBAR}.offsetParent !== null"))


async def test_review_list_workspace(page: Page, product: Product, tmp_path: Path) -> None:
    pdfs = [write_pdf(tmp_path / name, [f"{name}: a page to review."]) for name in NAMES]
    case = product.new_case()
    documents = f"{case.path}documents/"
    await listen_for_csp(page)
    await page.set_viewport_size({"width": 1366, "height": 768})
    await sign_in(page, product.admin)
    await goto(page, documents)
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await choose_files(page, *pdfs)
    for name in NAMES:
        await wait_ready(page, name, timeout=90)
    await page.evaluate("localStorage.removeItem('lexweb.reviewList.hiddenColumns')")

    # 1366x768: the first row is on screen as the page opens, and every column shown by
    # default (Status, Pages and Bates among them) lies within the window's width.
    await goto(page, documents)
    place = await page.evaluate(
        f"(() => {{ const r = {ROWS}[0].getBoundingClientRect();"
        "return {scrollY: window.scrollY, top: r.top, bottom: r.bottom, height: innerHeight,"
        "width: document.documentElement.clientWidth}; })()"
    )
    assert place["scrollY"] == 0, place
    assert place["top"] >= 0 and place["bottom"] <= place["height"], place
    shown = await page.evaluate(SHOWN_COLUMNS)
    names = [column["col"] for column in shown]
    assert {"status", "pages", "bates", "provenance", "origin", "review", "added"} <= set(names)
    outside = [c for c in shown if c["left"] < 0 or c["right"] > place["width"]]
    assert not outside, (outside, place)
    # The filters are a closed pane (no filter is active); no toolbar without a selection.
    assert not await page.evaluate("document.querySelector('.list-filters-pane').open")
    assert not await toolbar_shown(page)
    assert await page.evaluate("document.querySelector('#id_bulk_volume').offsetParent === null")
    await check(page)
    await shot(page, "list-1366x768")

    # Tick a row: the toolbar appears. Tagging through its dialog asks no confirmation.
    asked: list[str] = []

    async def answer(dialog: Dialog) -> None:
        asked.append(dialog.message)
        await dialog.dismiss()

    page.on("dialog", answer)
    await page.check("#document-rows tr:first-child input[name=ids]")
    assert await toolbar_shown(page)
    assert await page.text_content("[data-selected-count]") == "1"
    await page.click("#bulk-open-tag")
    await wait_for(page, f"{DIALOG}?.dataset.bulkDialog === 'tag'")
    fields = await page.evaluate(
        f"[...{DIALOG}.querySelectorAll('input:not([type=hidden]), select, textarea')]"
        ".map((f) => f.name)"
    )
    assert fields == ["tag_name"], fields  # only its own field
    assert "1 selected document" in (await page.text_content("dialog.bulk-dialog[open]") or "")
    await check(page)
    await shot(page, "tag-dialog")
    tagged = await page.evaluate(
        "document.querySelector('#document-rows tr:first-child [data-field=filename]').textContent"
    )
    await page.fill("#id_bulk_tag_name", "e2e-workspace")
    async with page.expect_navigation():
        await page.press("#id_bulk_tag_name", "Enter")  # Enter submits this dialog, as Tag
    await arrive(page)
    assert asked == [], asked
    badge = await wait_for(page, f"{row(tagged)}?.querySelector('.doc-tag')?.textContent", 10)
    assert badge == "e2e-workspace"

    # Withdrawing cannot be undone at once (each document comes back by its own Restore): it
    # asks, and a "no" leaves everything in place.
    await page.check("#document-rows tr:first-child input[name=ids]")
    await page.click("#bulk-open-withdraw")
    await wait_for(page, f"{DIALOG}?.dataset.bulkDialog === 'withdraw'")
    await page.fill("#id_bulk_reason", "uploaded to the wrong case")
    # Enter in its field is this dialog's button (not the form's first one, Tag's): it asks.
    await page.press("#id_bulk_reason", "Enter")
    for _ in range(50):
        if asked:
            break
        await page.wait_for_timeout(100)
    assert len(asked) == 1 and "Withdraw" in asked[0], asked
    assert await page.evaluate(f"{ROWS}.length") == len(NAMES)
    await page.keyboard.press("Escape")
    assert await page.evaluate(f"{DIALOG} === null")
    page.remove_listener("dialog", answer)

    # The column chooser hides Status; the choice holds after a reload. The server still draws
    # the column (hidden, not left out).
    await page.click(".column-chooser > summary")
    await page.uncheck(".column-chooser input[value=status]")
    assert "status" not in [c["col"] for c in await page.evaluate(SHOWN_COLUMNS)]
    await page.reload()
    await arrive(page)
    names = [c["col"] for c in await page.evaluate(SHOWN_COLUMNS)]
    assert "status" not in names and "bates" in names, names
    assert (
        await page.evaluate(f"{ROWS}[0].querySelector('[data-field=status]').textContent")
        == "Ready"
    )
    assert not await page.is_checked(".column-chooser input[value=status]")
    await check(page)
    await shot(page, "status-hidden-after-reload")

    # A filter active: the pane is open when the list comes back.
    await goto(page, f"{documents}?custodian=nobody")
    assert await page.evaluate("document.querySelector('.list-filters-pane').open")
    await check(page)

    # 820 px wide, every column shown: the page does not scroll sideways; the table's own box
    # does.
    await page.set_viewport_size({"width": 820, "height": 1000})
    await goto(page, documents)
    await page.click(".column-chooser > summary")
    await page.click("[data-columns-reset]")
    for name in ("kind", "size"):
        await page.check(f".column-chooser input[value={name}]")
    assert len(await page.evaluate(SHOWN_COLUMNS)) == 12
    assert await page.evaluate(SIDEWAYS), await page.evaluate(WIDTHS)
    wrap = await page.evaluate(
        "(() => { const w = document.querySelector('.review-list .table-wrap');"
        "return [w.scrollWidth, w.clientWidth]; })()"
    )
    assert wrap[0] > wrap[1], wrap
    await page.check("#document-rows tr:first-child input[name=ids]")
    assert await toolbar_shown(page)
    assert await page.evaluate(SIDEWAYS), await page.evaluate(WIDTHS)
    await check(page)
    await shot(page, "list-820")
    assert await csp_violations(page) == []

    # Without the list's script (blocked here): the plain bulk form, every field and its Apply,
    # under each action's name; the filters pane still opens (it is a details element).
    await page.set_viewport_size({"width": 1366, "height": 768})
    await page.route("**/document_list.js", lambda route: route.abort())
    await goto(page, documents)
    plain = await page.evaluate(
        "['#id_bulk_action', '#id_bulk_tag_name', '#id_bulk_packet', '#id_bulk_volume',"
        " '#id_bulk_reason', 'button[data-confirm]:not([data-bulk-submit])']"
        ".map((s) => document.querySelector(s).offsetParent !== null)"
    )
    assert all(plain), plain
    assert not await toolbar_shown(page)
    assert len(await page.evaluate(SHOWN_COLUMNS)) == 12
    await page.click(".list-filters-pane > summary")
    assert await page.is_visible("#id_custodian")
    await check(page)
    await shot(page, "list-without-its-script")
