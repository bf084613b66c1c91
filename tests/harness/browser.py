"""The browser of the browser tests: Debian's Chromium (never a downloaded one) driven by
Playwright, one per test session, a fresh context for each test.

Every page a test opens is checked with axe-core (as axe-playwright-python ships it): a serious
or critical violation fails the test. Tests reach pages through `goto` and `arrive` (after a
click or a form that leaves the page), which check the page they land on; a page that a test
opened and left unchecked fails the test at its end, so none slips through.

The async API, on the session's event loop: the sync API marks the thread as running an event
loop for as long as Playwright runs, which would break every later database and asyncio test of
the same session (one browser per session) in that process.

Screenshots are test artifacts: at each step a test names (`shot`) and on failure, under
`$LEXWEB_TEST_ARTIFACTS/screenshots/<test>/` (default var/test-artifacts/, which git ignores).
"""

import asyncio
import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from axe_playwright_python.base import AXE_SCRIPT
from playwright.async_api import Browser, BrowserContext, Page, ViewportSize, async_playwright
from playwright.async_api import Error as PlaywrightError

from tests.harness.product import Account, Product, artifacts_root

# Flags for a closed network: no background calls home (see the env notes of this workplace).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = ViewportSize(width=1280, height=900)
# What fails a page: https://github.com/dequelabs/axe-core/blob/develop/doc/API.md#results-object
FAILING_IMPACTS = {"serious", "critical"}

# Listens for Content-Security-Policy violations from the first moment of every document (an
# init script: the policy does not govern it); `csp_violations` reads what it heard. What
# axe-core itself does while it checks a page (it adds <style> elements, which the policy
# blocks) is not the page's: not heard.
CSP_LISTENER = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__lexwebAxeRunning ||
  window.__csp.push([e.violatedDirective, e.blockedURI,
    (e.sourceFile || '') + ':' + e.lineNumber, e.sample].join(' | ')));
"""


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshots_folder(test_name: str) -> Path:
    """Where a test's screenshots go ($LEXWEB_E2E_SCREENSHOTS, the older name, still wins)."""
    root = os.environ.get("LEXWEB_E2E_SCREENSHOTS")
    base = Path(root) if root else artifacts_root() / "screenshots"
    return base / re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name).strip("_")


# --- The axe check of every page ----------------------------------------------------------


@dataclass
class _Watch:
    """What the harness knows of one test's page: its documents and which were checked."""

    folder: Path
    loads: int = 0  # documents loaded in the page so far
    checked: int = 0  # the `loads` count when the last check ran
    missed: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)  # of each document, in order
    checked_urls: set[str] = field(default_factory=set)

    def on_load(self, page: Page) -> None:
        """A document has loaded: the one before it was left. It was missed if it was never
        checked, unless it was the same address checked before (a page that reloads itself
        when what it shows changes, as a production's page does when it is stamped)."""
        if self.loads and self.checked != self.loads and self.urls[-1] not in self.checked_urls:
            self.missed.append(self.urls[-1])
        self.loads += 1
        self.urls.append(page.url)

    def mark_checked(self, url: str) -> None:
        """The page at `url` (where it is now: its load event may still be on its way to
        `on_load`) was checked."""
        self.checked = self.loads
        self.checked_urls.add(url)


_watches: dict[int, _Watch] = {}


def _watch(page: Page) -> _Watch:
    return _watches[id(page)]


def _describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for violation in violations:
        targets = [" ".join(map(str, node["target"])) for node in violation["nodes"]][:5]
        lines.append(
            f"- {violation['id']} ({violation['impact']}): {violation['help']} "
            f"[{len(violation['nodes'])} element(s): {'; '.join(targets)}] "
            f"{violation.get('helpUrl', '')}"
        )
    return "\n".join(lines)


# What `evaluate` says when the document went away under it (a navigation; the last: a new
# document came between axe-core's injection and its run).
_NAVIGATING = (
    "Execution context was destroyed",
    "Cannot find context",
    "navigat",
    "axe is not defined",
)


async def axe_violations(page: Page) -> list[dict[str, Any]]:
    """The serious and critical violations axe-core finds on the page as it is now."""
    if not await page.evaluate("typeof window.axe === 'object'"):
        await page.evaluate(AXE_SCRIPT)
    results = await page.evaluate(
        "(async () => { window.__lexwebAxeRunning = true;"
        " try { return await axe.run(document, {resultTypes: ['violations']}); }"
        # The policy's reports of what axe did are queued: let them arrive first.
        " finally { await new Promise((r) => setTimeout(r, 100));"
        " window.__lexwebAxeRunning = false; } })()"
    )
    return [v for v in results["violations"] if v.get("impact") in FAILING_IMPACTS]


async def check(page: Page) -> None:
    """Check the page it is on now with axe-core; fail on a serious or critical violation.
    A page that goes on to the next one meanwhile (a redirect, a live page reloading itself)
    has the next one checked instead."""
    watch = _watch(page)
    for _attempt in range(5):
        await page.wait_for_load_state("load")
        loads = watch.loads
        try:
            found = await axe_violations(page)
        except PlaywrightError as exc:
            if not any(sign in exc.message for sign in _NAVIGATING):
                raise
            continue
        if watch.loads == loads:
            break
    else:
        raise AssertionError(f"{page.url} kept navigating: no accessibility check could run")
    watch.mark_checked(page.url)
    if found:
        await shot(page, "axe-violation")
        raise AssertionError(f"accessibility violations on {page.url}:\n{_describe(found)}")


async def wait_for(page: Page, expression: str, timeout: float = 30) -> Any:
    """Poll a JS expression in the page until it is truthy, and return its value (the page's
    own state; no fixed sleeps). Playwright's `wait_for_function` evaluates its string in the
    page, which the product's policy (no 'unsafe-eval') forbids; `evaluate` is not governed
    by it. A navigation under way is waited through."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = await page.evaluate(expression)
        except PlaywrightError as exc:
            if not any(sign in exc.message for sign in _NAVIGATING):
                raise
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for: {expression}")
        await asyncio.sleep(0.1)


async def goto(page: Page, url: str) -> None:
    """Open `url` (a path of the page's product, or a whole address) and check it."""
    response = await page.goto(url)
    assert response is not None
    await check(page)


async def arrive(page: Page, url: str | re.Pattern[str] | None = None) -> None:
    """After a click or a submit that leaves the page: wait for the next page (at `url` when
    given) to have loaded, and check it."""
    if url is not None:
        await page.wait_for_url(url)
    await check(page)


async def shot(page: Page, name: str) -> Path:
    """Save a screenshot of the whole page as a test artifact named `name`."""
    folder = _watch(page).folder
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    await page.screenshot(path=path, full_page=True)
    return path


async def csp_violations(page: Page) -> list[str]:
    """What the page's CSP listener heard (install it with `listen_for_csp`). A page that goes
    on to the next one meanwhile (a live page reloading itself) has the next one read."""
    for _attempt in range(5):
        # Reported asynchronously: give the browser its turn before reading.
        await page.wait_for_timeout(300)
        try:
            found: list[str] = await page.evaluate("window.__csp || []")
        except PlaywrightError as exc:
            if not any(sign in exc.message for sign in _NAVIGATING):
                raise
            await page.wait_for_load_state("load")
            continue
        return found
    raise AssertionError(f"{page.url} kept navigating: its CSP reports could not be read")


async def listen_for_csp(page: Page) -> None:
    await page.add_init_script(CSP_LISTENER)


async def sign_in(page: Page, account: Account) -> None:
    """Sign in on the sign-in page as a person does; land on the case list."""
    await goto(page, "/accounts/login/")
    await page.fill("#id_username", account.email)
    await page.fill("#id_password", account.password)
    async with page.expect_navigation():
        await page.click("form[method=post] button[type=submit]")
    await arrive(page)
    assert re.sub(r"\?.*", "", page.url).endswith("/"), page.url


async def sign_out(page: Page) -> None:
    async with page.expect_navigation():
        await page.locator('form[action="/accounts/logout/"] button').click()
    await arrive(page)


# --- Fixtures -----------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    """Debian's Chromium, headless, for the whole session. `make test` installs it where it
    can; under CI=true its absence is an error, never a skip."""
    binary = chromium_path()
    if binary is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
        pytest.skip("Chromium is not installed (make test installs it as root on Debian)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=binary, headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        await launched.close()


class Pages:
    """Opens watched pages, each in a fresh browser context (no cookies, no storage); at the
    test's end, for each: the page it is on is checked, a page opened and never checked fails
    the test, a failed test leaves a screenshot; the contexts are closed."""

    def __init__(self, request: pytest.FixtureRequest, browser: Browser) -> None:
        self._request = request
        self.browser = browser
        self._opened: list[tuple[BrowserContext, Page]] = []

    async def open(self, base_url: str) -> Page:
        context = await self.browser.new_context(
            base_url=base_url,
            viewport=VIEWPORT,
            accept_downloads=False,
            # Settled pages: axe-core measures colours as shown, and a notice still fading in
            # (app.css animates it unless the reader asks for reduced motion) is not its colour.
            reduced_motion="reduce",
        )
        context.set_default_timeout(30_000)
        opened = await context.new_page()
        name = self._request.node.name + (f"-{len(self._opened)}" if self._opened else "")
        folder = screenshots_folder(name)
        shutil.rmtree(folder, ignore_errors=True)  # an earlier run's pictures would mislead
        watch = _watches[id(opened)] = _Watch(folder=folder)
        opened.on("load", lambda _loaded: watch.on_load(opened))
        self._opened.append((context, opened))
        return opened

    async def close(self) -> None:
        failed = _failed(self._request)
        try:
            for _context, opened in self._opened:
                watch = _watch(opened)
                if failed:
                    with contextlib.suppress(Exception):
                        await shot(opened, "failure")
                    continue
                if watch.loads and watch.checked != watch.loads:
                    await check(opened)
                # A page that reloaded itself before the test got to check it (a production's
                # page when its stamping ends) counts as checked once its address was.
                missed = [url for url in watch.missed if url not in watch.checked_urls]
                assert not missed, (
                    "pages opened and left without their accessibility check (use goto or "
                    "arrive): " + json.dumps(missed)
                )
        finally:
            for context, opened in self._opened:
                _watches.pop(id(opened), None)
                await context.close()


def _failed(request: pytest.FixtureRequest) -> bool:
    """Whether the test itself failed (tests/e2e/conftest.py keeps its report on the item)."""
    report = getattr(request.node, "lexweb_call_report", None)
    return bool(report is not None and report.failed)


@pytest_asyncio.fixture(loop_scope="session")
async def pages(request: pytest.FixtureRequest, browser: Browser) -> AsyncIterator[Pages]:
    """Watched pages on any product (for a test that launches a product of its own)."""
    opened = Pages(request, browser)
    try:
        yield opened
    finally:
        await opened.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(pages: Pages, product: Product) -> Page:
    """A watched page on the session's product, in a fresh browser context."""
    return await pages.open(product.base_url)
