"""Issue 25 req 5 in a real browser against a real `make run`: sign-in links by mail. The admin
creates a person without a password on the People page and sends them a sign-in link; the
launched product mails it to a real SMTP server in the test process (tests/harness/mail.py),
where the test reads it. The person opens the link in a browser of their own: the page only
asks them to confirm (mail scanners open links, so opening signs nobody in), the button signs
them in and leads to choosing a password, which they choose, and they are signed in. The link
works once: opened again, it says it does not work. Each page is checked with axe-core;
screenshots are kept as artifacts."""

import os
import re
import secrets

import pytest
from playwright.async_api import Page

from tests.e2e.steps import person_create
from tests.harness.browser import Pages, arrive, goto, shot, sign_in, sign_out
from tests.harness.product import Account, Product
from tests.harness.waiting import wait_until

pytestmark = pytest.mark.asyncio(loop_scope="session")

CHOSEN = "E2e-chosen-by-link-password-1"
SIGNED_IN = 'form[action="/accounts/logout/"]'


async def test_admin_sends_a_sign_in_link_and_the_person_chooses_a_password(
    page: Page, pages: Pages, product: Product
) -> None:
    if os.environ.get("LEXWEB_TEST_PRODUCT_URL"):
        pytest.skip("the product at LEXWEB_TEST_PRODUCT_URL sends mail nowhere the test can read")
    inbox = product.mail
    assert inbox is not None, "the session's product has no mail server"
    tag = secrets.token_hex(3)
    person = Account(f"lina.{tag}@firm.test", CHOSEN, f"Lina Linked{tag}", "staff")

    # The admin creates the person without a password and sends them a link.
    await sign_in(page, product.admin)
    person_url = await person_create(page, person)
    assert "No password yet" in (await page.text_content("dl.facts") or "")
    await shot(page, "person-without-password")
    async with page.expect_navigation():
        await page.click('section[aria-labelledby="link-heading"] button[type=submit]')
    await arrive(page, person_url)
    notice = await page.text_content(".messages") or ""
    assert f"Sent a sign-in link to {person.email}." in notice, notice
    await shot(page, "link-sent")

    # The mail, as the SMTP server received it.
    wait_until(lambda: inbox.to(person.email), 30, f"a mail to {person.email}")
    [message] = inbox.to(person.email)
    assert message["Subject"] == "Your sign-in link for lexweb"
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    text = str(body.get_content())
    assert f"({product.admin.email}), an admin of lexweb, sent you this link" in text, text
    found = re.search(re.escape(product.base_url) + r"(/accounts/sign-in/[A-Za-z0-9_-]{43}/)", text)
    assert found, text
    link = found.group(1)

    # The person opens it in a browser of their own: a confirm page, not yet signed in.
    theirs = await pages.open(product.base_url)
    await goto(theirs, link)
    assert await theirs.text_content("h1") == "Sign in with your link"
    assert person.email in (await theirs.text_content("main") or "")
    assert await theirs.locator(SIGNED_IN).count() == 0
    await shot(theirs, "link-opened")
    async with theirs.expect_navigation():
        await theirs.click("main form[method=post] button[type=submit]")
    await arrive(theirs, re.compile(r"/accounts/password/$"))
    assert await theirs.text_content("h1") == "Choose your password"
    assert await theirs.locator(SIGNED_IN).count() == 1
    await shot(theirs, "choose-password")
    await theirs.fill("#id_password", CHOSEN)
    await theirs.fill("#id_again", CHOSEN)
    async with theirs.expect_navigation():
        await theirs.click("main form[method=post] button[type=submit]")
    await arrive(theirs, re.compile(r"/$"))
    assert "Your password is set" in (await theirs.text_content(".messages") or "")
    assert await theirs.locator(SIGNED_IN).count() == 1
    await shot(theirs, "password-chosen")

    # The link worked once: opened again, it does not.
    await goto(theirs, link)
    assert await theirs.text_content("h1") == "This sign-in link does not work"
    await shot(theirs, "link-used")

    # The person signs in with the password they chose; the admin sees that they have one.
    await sign_out(theirs)
    await sign_in(theirs, person)
    await goto(page, person_url)
    assert "Has a password" in (await page.text_content("dl.facts") or "")
