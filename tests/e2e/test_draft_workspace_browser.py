"""A real browser against a real `make run` (web, the workers of the board queues, the demo's
fake backends): issue 25 req 2, the draft view. A motion run writes a draft, its adversarial
reviewer attacks it, its revision writes the next version. The version the reviewer read is
opened as a workspace: at 1366x768 the text's first paragraph is on screen without scrolling,
the finding panel beside it, the reviewer's points as margin notes beside the words they quote;
a click on a note marks its words, and focus on a note (by keyboard) does too. At 820 px wide
nothing scrolls sideways. Every state is checked with axe and breaks no rule of the content
security policy; screenshots are saved as artifacts."""

import re
from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.e2e.steps import Visits, frozen_packet_of, start_run, write_pdf
from tests.harness.browser import (
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

FILENAME = "e2e-draft-workspace.pdf"
RECORD = [
    "On March 1, 2024 Acme Corp. paid $1,250.00 to Widget Ltd. for rent.",
    "The tenant shall repair the roof before the winter.",
    "On April 2, 2024 Widget Ltd. wrote that the roof leaked.",
]
# On the run page: the version the adversarial reviewer read, the one the last writing stage
# before it saved.
READ_VERSION = """(() => {
  let saved = null;
  for (const li of document.querySelectorAll('#timeline li.stage')) {
    if (li.querySelector('.stage__name').textContent.includes('Adversarial')) return saved;
    const link = [...li.querySelectorAll('a')]
      .find((a) => /\\/versions\\/\\d+\\/$/.test(a.pathname));
    if (link) saved = link.pathname;
  }
  return null;
})()"""
PLACE = """(() => {
  const text = document.querySelector('#draft-text');
  const walker = document.createTreeWalker(text, NodeFilter.SHOW_TEXT);
  let first = null;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.textContent.trim() && !node.parentElement.closest('.visually-hidden, [aria-hidden]')) {
      first = node; break;
    }
  }
  const range = document.createRange();
  range.selectNodeContents(first);
  const para = range.getBoundingClientRect();
  const box = text.getBoundingClientRect();
  const panel = document.querySelector('#finding-panel').getBoundingClientRect();
  const notes = document.querySelector('#margin-notes').getBoundingClientRect();
  return {scrollY: window.scrollY, height: innerHeight, paraTop: para.top, paraBottom: para.bottom,
          textRight: box.right, textTop: box.top, panelLeft: panel.left, panelTop: panel.top,
          notesLeft: notes.left, notesRight: notes.right};
})()"""
SIDEWAYS = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
WIDTHS = "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"


async def test_the_draft_view_is_a_workspace_with_the_reviewers_points_in_the_margin(
    page: Page, product: Product, tmp_path: Path
) -> None:
    pdf = write_pdf(tmp_path / FILENAME, ["\n".join(RECORD)], fontsize=11)
    case = product.new_case()
    visits = Visits()
    await listen_for_csp(page)
    await sign_in(page, case.lawyer)
    await frozen_packet_of(
        page, visits, case.path, pdf, title="Workspace record", reason="The lease record"
    )
    runs = f"{case.path}runs/"
    await start_run(
        page, visits, runs, packet="Workspace record", kind="motion",
        instructions="Move to compel the repair.",
    )  # fmt: skip
    await wait_for(
        page,
        "!['queued', 'running'].includes(document.querySelector('#run-state').dataset.status)",
        300,
    )
    await page.reload()
    run_path = await page.evaluate("location.pathname")
    status = await page.evaluate("document.querySelector('#run-state').dataset.status")
    assert status in ("waiting_for_approval", "succeeded"), status
    read = await page.evaluate(READ_VERSION)
    assert read, "no version was saved before the reviewer"
    points = await page.evaluate(
        "[...document.querySelectorAll('#timeline li.stage')].find((li) =>"
        " li.querySelector('.stage__name').textContent.includes('Adversarial'))"
        ".querySelectorAll('.finding-list li').length"
    )
    assert points >= 1, "the reviewer raised no point"

    # 1366x768: the text's first paragraph is on screen as the page opens, the reviewer's
    # points in a margin to its right and the finding panel to the right of both.
    await page.set_viewport_size({"width": 1366, "height": 768})
    await goto(page, read)
    await wait_for(page, "document.querySelector('.margin-notes__list--placed') !== null")
    # The version says which run and stage wrote it, in words (issue 25 req 6), not "Markdown
    # (pasted)", and links to that run.
    written = await page.evaluate(
        "(() => { const w = document.querySelector('[data-written-by]');"
        " return {text: w.textContent.trim(), run: w.querySelector('a')?.pathname}; })()"
    )
    run_number = run_path.rstrip("/").rsplit("/", 1)[-1]
    assert re.match(rf"Written by the [a-z ]+ stage of run {run_number}\b", written["text"]), (
        written
    )
    assert written["run"] == run_path, written
    place = await page.evaluate(PLACE)
    assert place["scrollY"] == 0, place
    assert place["paraTop"] >= 0 and place["paraBottom"] <= place["height"], place
    assert place["notesLeft"] >= place["textRight"], place
    assert place["panelLeft"] >= place["notesRight"] and place["panelTop"] < place["height"], place
    assert abs(place["panelTop"] - place["textTop"]) < 80, place  # side by side from the top
    notes = await page.evaluate(
        "[...document.querySelectorAll('#margin-notes li[data-note]')].map((li) => li.dataset.note)"
    )
    assert notes, "no note anchored in the text"
    await assert_notes_level_with_their_words(page, notes)
    first = notes[0]
    await check(page)
    await shot(page, "workspace-1366x768")

    # A click on a note marks its words (and only its); the note is marked too.
    await page.click(f"#note-{first} a.margin-note__link")
    active = (
        "[...document.querySelectorAll('#draft-text .note-span--active')]"
        ".map((s) => s.dataset.notes)"
    )
    marked = await page.evaluate(active)
    assert marked and all(first in m.split(" ") for m in marked), marked
    assert await page.evaluate(
        f"document.querySelector('#note-{first}').classList.contains('margin-note--active')"
    )
    await check(page)
    await shot(page, "note-clicked")

    # By keyboard: focus on the last note marks its words.
    last = notes[-1]
    await page.focus(f"#note-{last} a.margin-note__link")
    marked = await page.evaluate(active)
    assert marked and all(last in m.split(" ") for m in marked), marked
    assert await page.evaluate(
        f"document.querySelector('#note-{last} a').textContent.includes('Point {last}:')"
    )

    # 1024x768 (64rem) and 960x800 (half of a 1920 px screen, beside the evidence): the notes
    # are still beside the words they quote, between the text and the finding panel, and the
    # text keeps a readable width.
    for width, height in ((1024, 768), (960, 800)):
        await narrower(page, read, width, height)

    # 820 px wide: nothing scrolls sideways; the notes are a list below the text.
    await page.set_viewport_size({"width": 820, "height": 1000})
    await goto(page, read)
    assert await page.evaluate(SIDEWAYS), await page.evaluate(WIDTHS)
    below = await page.evaluate(
        "document.querySelector('#margin-notes').getBoundingClientRect().top >= "
        "document.querySelector('#draft-text').getBoundingClientRect().bottom"
    )
    assert below
    assert not await page.evaluate("document.querySelector('.margin-notes__list--placed')")
    await shot(page, "workspace-820")
    await check(page)
    assert await csp_violations(page) == []
    assert visits.violations() == {}


async def assert_notes_level_with_their_words(page: Page, notes: list[str]) -> None:
    """Each anchored note has its words marked in the text, starting where its mark is, and sits
    level with them (or below the note above it); the first is level with its words."""
    for number in notes:
        anchored = await page.evaluate(
            f"(() => {{ const start = document.querySelector('#note-at-{number}');"
            f" const note = document.querySelector('#note-{number}');"
            " const spans = document.querySelectorAll("
            f"'#draft-text .note-span[data-notes~=\"{number}\"]');"
            " return {start: !!start && !!start.closest('#draft-text'), spans: spans.length,"
            " noteTop: note.getBoundingClientRect().top,"
            " startTop: start ? start.getBoundingClientRect().top : null}; })()"
        )
        assert anchored["start"] and anchored["spans"] >= 1, anchored
        assert anchored["noteTop"] >= anchored["startTop"] - 2, anchored
    first = notes[0]
    first_words = await page.evaluate(
        f"(() => {{ const note = document.querySelector('#note-{first}').getBoundingClientRect();"
        f" const start = document.querySelector('#note-at-{first}').getBoundingClientRect();"
        " return Math.abs(note.top - start.top); })()"
    )
    assert first_words < 4, first_words  # the first note is level with its words


async def narrower(page: Page, read: str, width: int, height: int) -> None:
    """At `width` x `height`: the notes are placed beside their words, between the text (400 px
    wide or more) and the finding panel, both from the top; nothing scrolls sideways."""
    await page.set_viewport_size({"width": width, "height": height})
    await goto(page, read)
    await wait_for(page, "document.querySelector('.margin-notes__list--placed') !== null")
    place = await page.evaluate(PLACE)
    assert place["paraTop"] >= 0 and place["paraBottom"] <= place["height"], place
    assert place["notesLeft"] >= place["textRight"], place
    assert place["panelLeft"] >= place["notesRight"], place
    assert abs(place["panelTop"] - place["textTop"]) < 80, place
    assert await page.evaluate(
        "document.querySelector('#draft-text').getBoundingClientRect().width >= 400"
    ), width
    assert await page.evaluate(SIDEWAYS), await page.evaluate(WIDTHS)
    notes = await page.evaluate(
        "[...document.querySelectorAll('#margin-notes li[data-note]')].map((li) => li.dataset.note)"
    )
    await assert_notes_level_with_their_words(page, notes)
    await check(page)
    await shot(page, f"workspace-{width}x{height}")
