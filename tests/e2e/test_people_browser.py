"""Issue 25 req 5 in a real browser against a real `make run`: the admin creates an account on
the People page (not the Django admin's form), and a lawyer of a case adds that person as a
member through the member picker, by part of their name, without knowing their e-mail. The
new person then signs in with the password the admin set and sees the case. Each page is
checked with axe-core; screenshots are kept as artifacts."""

import secrets

import pytest
from playwright.async_api import Page

from tests.e2e.steps import person_create
from tests.harness.browser import arrive, goto, shot, sign_in, sign_out, wait_for
from tests.harness.product import Account, Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

PASSWORD = "E2e-people-password-1"


async def test_admin_creates_a_person_and_a_lawyer_adds_them_through_the_picker(
    page: Page, product: Product
) -> None:
    case = product.new_case("E2E people matter")
    tag = secrets.token_hex(3)
    person = Account(f"pia.{tag}@firm.test", PASSWORD, f"Pia Paralegal{tag}", "staff")

    await sign_in(page, product.admin)
    await person_create(page, person, password=PASSWORD, snap="people-create")
    assert person.full_name in (await page.text_content("h1") or "")
    await shot(page, "person-created")
    await goto(page, f"/accounts/people/?q={tag}")
    assert person.email in (await page.text_content("main") or "")
    await sign_out(page)

    # The lawyer knows only a part of the name: the picker finds the person as they type.
    await sign_in(page, case.lawyer)
    await goto(page, case.path)
    await page.fill("#id_email", f"paralegal{tag}")
    await wait_for(
        page, "document.querySelectorAll('[data-member-list] input[name=user_id]').length === 1"
    )
    status = await page.text_content("[data-member-status]")
    assert status == "1 person found.", status
    await shot(page, "picker-found")
    await page.focus("#id_email")
    await page.keyboard.press("ArrowDown")
    assert await page.evaluate("document.activeElement.name") == "user_id"
    await page.select_option("#id_role", "staff")
    async with page.expect_navigation():
        await page.click("form[data-member-picker] button[type=submit]")
    await arrive(page, case.path)
    members = await page.text_content("#members-heading + .table-wrap")
    assert members and person.full_name in members and person.email in members
    assert f"{person.full_name} now has access to this case." in (
        await page.text_content(".messages") or ""
    )
    await shot(page, "member-added")
    await sign_out(page)

    # The new person signs in with the password the admin set and sees the case.
    await sign_in(page, person)
    assert case.title in (await page.text_content("main") or "")
