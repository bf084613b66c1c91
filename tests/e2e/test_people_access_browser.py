"""Issue 25 req 5 in a real browser against a real `make run`: on the People page an admin sets
a person's password and deactivates and reactivates their account, and the person, signed in
in a browser of their own, feels each at once: a new password ends their open session and the
old one stops working; deactivating ends it too and refuses signing in (after the admin
confirms the question the button asks); reactivating lets them in again. Each page is checked
with axe-core; screenshots are kept as artifacts."""

import re
import secrets

import pytest
from playwright.async_api import Dialog, Page

from tests.e2e.steps import person_create
from tests.harness.browser import Pages, arrive, goto, shot, sign_in
from tests.harness.product import Account, Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FIRST = "E2e-first-password-1"
SECOND = "E2e-second-password-2"
SIGN_IN = "/accounts/login/"


async def sign_in_refused(page: Page, account: Account) -> str:
    """Try to sign in as `account` and be refused: stays on the sign-in page; its error (the
    same for a wrong password and a deactivated account: it does not tell which)."""
    await goto(page, SIGN_IN)
    await page.fill("#id_username", account.email)
    await page.fill("#id_password", account.password)
    async with page.expect_navigation():
        await page.click("form[method=post] button[type=submit]")
    await arrive(page, re.compile(r"/accounts/login/"))
    return (await page.text_content(".alert--error") or "").strip()


async def signed_out(page: Page) -> bool:
    """Whether the person's open page, reloaded, sends them to the sign-in page."""
    await goto(page, "/")
    return SIGN_IN in page.url


async def test_admin_sets_a_password_deactivates_and_reactivates_and_the_person_feels_it(
    page: Page, pages: Pages, product: Product
) -> None:
    tag = secrets.token_hex(3)
    person = Account(f"pat.{tag}@firm.test", FIRST, f"Pat Access{tag}", "staff")
    await sign_in(page, product.admin)
    person_page = await person_create(page, person, password=FIRST)

    theirs = await pages.open(product.base_url)
    await sign_in(theirs, person)
    assert not await signed_out(theirs)

    # A new password: their open session ends, the old password no longer works.
    await page.fill("#id_password", SECOND)
    await page.fill("#id_again", SECOND)
    async with page.expect_navigation():
        await page.click('form[action$="/password/"] button[type=submit]')
    await arrive(page, person_page)
    notice = await page.text_content(".messages") or ""
    assert f"Password set for {person.email}; their open browser sessions ended." in notice
    await shot(page, "password-set")
    assert await signed_out(theirs)
    refused = await sign_in_refused(theirs, person)
    assert refused, "no error shown"
    await shot(theirs, "old-password-refused")
    person = Account(person.email, SECOND, person.full_name, person.role)
    await sign_in(theirs, person)

    # Deactivating asks first; declined, nothing changes.
    questions: list[str] = []

    async def decline(dialog: Dialog) -> None:
        questions.append(dialog.message)
        await dialog.dismiss()

    page.once("dialog", decline)
    await page.click('form[action$="/active/"] button')
    await page.wait_for_timeout(500)
    assert questions == [f"Deactivate {person.full_name}? They lose access at once."], questions
    assert page.url.endswith(person_page) or page.url == person_page
    assert "Active" in (await page.text_content("dl.facts") or "")

    async def accept(dialog: Dialog) -> None:
        questions.append(dialog.message)
        await dialog.accept()

    page.once("dialog", accept)
    async with page.expect_navigation():
        await page.click('form[action$="/active/"] button')
    await arrive(page, person_page)
    assert len(questions) == 2
    assert "Deactivated" in (await page.text_content("dl.facts") or "")
    assert f"{person.email} is deactivated" in (await page.text_content(".messages") or "")
    await shot(page, "deactivated")
    assert await signed_out(theirs)
    assert await sign_in_refused(theirs, person) == refused
    await shot(theirs, "deactivated-refused")

    # The People list says so, and reactivating lets them in again.
    await goto(page, f"/accounts/people/?q={tag}")
    row = await page.text_content("main") or ""
    assert person.email in row and "Deactivated" in row, row
    await goto(page, person_page)
    async with page.expect_navigation():
        await page.click('form[action$="/active/"] button')
    await arrive(page, person_page)
    assert f"{person.email} can sign in again." in (await page.text_content(".messages") or "")
    assert "Active" in (await page.text_content("dl.facts") or "")
    await sign_in(theirs, person)
    assert not await signed_out(theirs)
    await shot(theirs, "signed-in-again")
