"""Sign-in links by mail (issue 25 req 5): where a mail server is configured, an admin sends a
person a link from the People page; it signs them in once (GET only shows a button, since mail
scanners open links), within LEXWEB_SIGN_IN_LINK_MINUTES, and a person without a password then
chooses one. The mail goes through a real SMTP server (aiosmtpd on 127.0.0.1) and is read back
from it; nothing is mocked."""

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from apps.accounts import services
from apps.accounts.models import AuditEvent, SignInLink, User
from apps.accounts.reauth import REAUTH_SESSION_KEY
from tests.conftest import session_client
from tests.factories import PASSWORD
from tests.harness import mail
from tests.harness.ports import free_port

pytestmark = pytest.mark.django_db

GOOD = "A-good-long-passphrase-7"
LINK = re.compile(r"http://testserver(/accounts/sign-in/[A-Za-z0-9_-]{43}/)")


class Inbox(mail.Inbox):
    def link_path(self, n: int = -1) -> str:
        found = LINK.search(self.body(n))
        assert found, self.body(n)
        return found.group(1)


@pytest.fixture
def inbox(settings: Any) -> Iterator[Inbox]:
    """A real SMTP server on 127.0.0.1, and the mail settings pointed at it."""
    with mail.smtp_server(Inbox()) as (received, port):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST = "127.0.0.1"
        settings.EMAIL_PORT = port
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
        settings.EMAIL_TIMEOUT = 10
        settings.DEFAULT_FROM_EMAIL = "lexweb <lexweb@firm.test>"
        settings.LEXWEB_SIGN_IN_LINK_MINUTES = 60
        settings.TIME_ZONE = "UTC"
        yield received


@pytest.fixture
def newcomer(db: None) -> User:
    """A person created without a password: they cannot sign in until they choose one."""
    return services.user_create(
        email="nina.new@firm.test", full_name="Nina New", role="staff", password=None, actor=None
    )


def _send(admin: User, person: User, **extra: str) -> Any:
    return session_client(admin).post(f"/accounts/people/{person.pk}/sign-in-link/", extra)


def _signed_in_as(client: Client) -> int | None:
    raw = client.session.get("_auth_user_id")
    return int(raw) if raw else None


def _link_failures() -> list[str]:
    rows = AuditEvent.objects.filter(action="auth.login_link_failed").order_by("id")
    return [row.detail["reason"] for row in rows]


# --- The whole way: send, open, sign in, choose a password -----------------------------------


def test_a_link_sent_by_real_smtp_signs_in_once_and_asks_for_a_password(
    inbox: Inbox, admin_user: User, newcomer: User
) -> None:
    sent_at = timezone.now()
    response = _send(admin_user, newcomer)

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/people/{newcomer.pk}/"
    assert len(inbox.messages) == 1
    message = inbox.messages[0]
    assert inbox.recipients == [[newcomer.email]]
    assert message["To"] == newcomer.email
    assert message["From"] == "lexweb <lexweb@firm.test>"
    assert message["Subject"] == "Your sign-in link for lexweb"
    body = inbox.body()
    # Who sent it and when it expires.
    assert "Ada Admin (admin@firm.test), an admin of lexweb, sent you this link" in body
    expires = timezone.localtime(sent_at + timedelta(minutes=60))
    assert f"It works once, until {expires.day} {expires.strftime('%b %Y, %H:')}" in body
    assert "(60 minutes after it was sent)" in body
    assert "lexweb asks you to choose a password" in body
    path = inbox.link_path()
    secret = path.split("/")[-2]
    # Stored hashed: the secret is in no row, and the audit says who sent it to whom.
    link = SignInLink.objects.get(user=newcomer)
    assert secret not in link.digest and len(link.digest) == 64
    sent = AuditEvent.objects.get(action="user.signin_link_send")
    assert (sent.actor, sent.target_id, sent.detail["link"]) == (
        admin_user,
        str(newcomer.pk),
        link.pk,
    )

    # Opening it (what a mail scanner does) only shows the button, and may be repeated.
    browser = Client()
    for _ in range(2):
        opened = browser.get(path)
        assert opened.status_code == 200
        assert f"Sign in as {newcomer.email}" in opened.content.decode()
        assert any(word in opened["Cache-Control"] for word in ("no-store", "max-age=0"))
        assert _signed_in_as(browser) is None
    link.refresh_from_db()
    assert link.used_at is None

    signed_in = browser.post(path)

    assert signed_in.status_code == 302
    assert signed_in["Location"] == "/accounts/password/"
    assert _signed_in_as(browser) == newcomer.pk
    # A link is no password confirmation: creating an API token still asks for the password.
    assert REAUTH_SESSION_KEY not in browser.session
    login = AuditEvent.objects.filter(action="auth.login").latest("id")
    assert (login.actor, login.detail) == (newcomer, {"by": "sign-in link"})
    link.refresh_from_db()
    assert link.used_at is not None

    # Once: the same link from another browser (or the same one) does nothing.
    again = Client().post(path)
    assert again.status_code == 410
    assert "already used" in again.content.decode()
    assert _link_failures() == ["used"]

    # The person chooses a password without an old one, keeps this session, and signs in with it.
    page = browser.get("/accounts/password/")
    assert page.status_code == 200
    chosen = browser.post("/accounts/password/", {"password": GOOD, "again": GOOD})
    assert chosen.status_code == 302
    assert _signed_in_as(browser) == newcomer.pk
    newcomer.refresh_from_db()
    assert newcomer.check_password(GOOD)
    assert AuditEvent.objects.filter(action="auth.password_choose", actor=newcomer).exists()
    assert Client().login(username=newcomer.email, password=GOOD)
    # The link's session is spent on that: choosing again needs the current password.
    assert browser.get("/accounts/password/").status_code == 403

    # The secret was never written to the audit log.
    for row in AuditEvent.objects.all():
        assert secret not in f"{row.actor_label} {row.target_label} {row.detail}"


def test_a_person_with_a_password_may_choose_a_new_one_only_after_a_link(
    inbox: Inbox, admin_user: User, lawyer: User
) -> None:
    assert session_client(lawyer).get("/accounts/password/").status_code == 403

    _send(admin_user, lawyer)
    browser = Client()
    signed_in = browser.post(inbox.link_path())

    assert signed_in["Location"] == "/accounts/password/"
    assert browser.post("/accounts/password/", {"password": GOOD, "again": GOOD}).status_code == 302
    lawyer.refresh_from_db()
    assert lawyer.check_password(GOOD)
    assert AuditEvent.objects.get(action="auth.password_choose").detail == {"replaced": True}


# --- When mail is not configured ---------------------------------------------------------------


def test_with_no_mail_host_the_pages_offer_no_link_and_none_is_sent(
    settings: Any, admin_user: User, newcomer: User
) -> None:
    settings.EMAIL_HOST = ""
    admin = session_client(admin_user)

    people = admin.get("/accounts/people/").content.decode()
    person = admin.get(f"/accounts/people/{newcomer.pk}/").content.decode()
    refused = admin.post(f"/accounts/people/{newcomer.pk}/sign-in-link/", follow=True)

    assert "Send a sign-in link" not in people and "Send a sign-in link" not in person
    assert "no mail server is configured" in people
    assert "No mail server is configured" in person
    assert "No mail server is configured (LEXWEB_EMAIL_HOST)" in refused.content.decode()
    assert not SignInLink.objects.exists()


def test_with_mail_configured_the_people_page_has_a_button_per_active_person(
    inbox: Inbox, admin_user: User, newcomer: User, lawyer: User
) -> None:
    services.user_set_active(actor=admin_user, user_id=lawyer.pk, active=False)
    admin = session_client(admin_user)

    page = admin.get("/accounts/people/").content.decode()
    sent = admin.post(
        f"/accounts/people/{newcomer.pk}/sign-in-link/", {"back": "people"}, follow=True
    )

    assert f'action="/accounts/people/{newcomer.pk}/sign-in-link/"' in page
    assert f'action="/accounts/people/{lawyer.pk}/sign-in-link/"' not in page
    assert sent.redirect_chain == [("/accounts/people/", 302)]
    assert f"Sent a sign-in link to {newcomer.email}" in sent.content.decode()
    assert len(inbox.messages) == 1


def test_only_admins_send_links(inbox: Inbox, lawyer: User, newcomer: User) -> None:
    response = session_client(lawyer).post(f"/accounts/people/{newcomer.pk}/sign-in-link/")

    assert response.status_code == 403
    assert not inbox.messages and not SignInLink.objects.exists()


def test_an_unreachable_mail_server_sends_nothing_and_the_earlier_link_still_works(
    inbox: Inbox, settings: Any, admin_user: User, newcomer: User
) -> None:
    _send(admin_user, newcomer)
    first = inbox.link_path()
    settings.EMAIL_PORT = free_port()  # nothing listens there

    failed = session_client(admin_user).post(
        f"/accounts/people/{newcomer.pk}/sign-in-link/", follow=True
    )

    assert "did not take the message, so no link was sent" in failed.content.decode()
    assert SignInLink.objects.count() == 1
    assert AuditEvent.objects.filter(action="user.signin_link_send").count() == 1
    browser = Client()
    assert browser.post(first).status_code == 302
    assert _signed_in_as(browser) == newcomer.pk


# --- Links that do not work ---------------------------------------------------------------------


def test_sending_again_voids_the_earlier_link(
    inbox: Inbox, admin_user: User, newcomer: User
) -> None:
    _send(admin_user, newcomer)
    _send(admin_user, newcomer)
    first, second = inbox.link_path(0), inbox.link_path(1)
    assert first != second

    browser = Client()
    old = browser.post(first)
    assert old.status_code == 410
    assert "A newer sign-in link was sent to you" in old.content.decode()
    assert _signed_in_as(browser) is None
    assert browser.post(second).status_code == 302
    assert _signed_in_as(browser) == newcomer.pk
    assert _link_failures() == ["replaced"]
    assert (
        AuditEvent.objects.filter(action="user.signin_link_send").latest("id").detail["replaced"]
        == 1
    )


def test_an_expired_link_is_refused(inbox: Inbox, admin_user: User, newcomer: User) -> None:
    _send(admin_user, newcomer)
    SignInLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    browser = Client()

    opened, posted = browser.get(inbox.link_path()), browser.post(inbox.link_path())

    for response in (opened, posted):
        assert response.status_code == 410
        assert "This sign-in link expired at" in response.content.decode()
    assert _signed_in_as(browser) is None
    assert _link_failures() == ["expired", "expired"]
    failed = AuditEvent.objects.filter(action="auth.login_link_failed").first()
    assert failed is not None and failed.actor_label == newcomer.email


def test_a_deactivated_person_gets_nothing(inbox: Inbox, admin_user: User, newcomer: User) -> None:
    _send(admin_user, newcomer)
    path = inbox.link_path()
    services.user_set_active(actor=admin_user, user_id=newcomer.pk, active=False)
    browser = Client()

    opened, posted = browser.get(path), browser.post(path)
    refused = session_client(admin_user).post(
        f"/accounts/people/{newcomer.pk}/sign-in-link/", follow=True
    )

    # The same page as an unknown link: it says nothing of the account.
    for response in (opened, posted):
        assert response.status_code == 404
        assert "This is not a working sign-in link" in response.content.decode()
        assert newcomer.email not in response.content.decode()
    assert _signed_in_as(browser) is None
    assert _link_failures() == ["inactive", "inactive"]
    assert "is deactivated: a sign-in link would not work" in refused.content.decode()
    assert len(inbox.messages) == 1


@pytest.mark.parametrize(
    "token",
    [
        "A" * 43,  # the right shape, but no such link
        "A" * 42,
        "x" * 5000,
        "%00" * 15,
        "..%5C..%5Cetc%5Cpasswd",
        "%3Cscript%3Ealert(1)%3C%5Cscript%3E",
        "%27%20OR%201%3D1%20--",
        "%C3%A9" * 43,
        "%F0%9F%94%91",
    ],
)
def test_a_hostile_or_oversized_token_is_refused_cleanly(token: str, admin_user: User) -> None:
    browser = Client()
    path = f"/accounts/sign-in/{token}/"

    for response in (browser.get(path), browser.post(path)):
        assert response.status_code == 404
        assert "This is not a working sign-in link" in response.content.decode()
    assert _signed_in_as(browser) is None
    rows = AuditEvent.objects.filter(action="auth.login_link_failed")
    assert [(r.actor_label, r.detail) for r in rows] == [
        ("unknown account", {"reason": "unknown", "link": None})
    ] * 2


def test_the_sign_in_throttle_applies_to_links(
    inbox: Inbox, settings: Any, admin_user: User, newcomer: User
) -> None:
    settings.LEXWEB_SIGNIN_ADDRESS_ATTEMPTS = 3
    _send(admin_user, newcomer)
    browser = Client(REMOTE_ADDR="10.9.8.7")
    for _ in range(3):
        assert browser.get(f"/accounts/sign-in/{'B' * 43}/").status_code == 404

    # Spent: even the right link waits, and signs in nobody.
    throttled = browser.post(inbox.link_path())

    assert throttled.status_code == 429
    assert int(throttled["Retry-After"]) > 0
    assert _signed_in_as(browser) is None
    assert AuditEvent.objects.filter(action="auth.login_throttled").count() == 1
    # Another address is not held back, and a working link gives back what it took.
    other = Client(REMOTE_ADDR="10.9.8.8")
    for _ in range(4):
        assert other.get(inbox.link_path()).status_code == 200
    assert other.post(inbox.link_path()).status_code == 302


def test_a_lawyer_password_still_works_beside_links(lawyer: User) -> None:
    """Sign-in by password is unchanged (the receiver's only change is for links)."""
    browser = Client()
    response = browser.post("/accounts/login/", {"username": lawyer.email, "password": PASSWORD})

    assert response.status_code == 302
    assert REAUTH_SESSION_KEY in browser.session
    assert AuditEvent.objects.filter(action="auth.login").latest("id").detail == {}
