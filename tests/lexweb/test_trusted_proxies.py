"""X-Forwarded-For is believed only from the proxies named in LEXWEB_TRUSTED_PROXIES (empty by
default). Otherwise any local process could name the address that the sign-in and bad-token
throttles count and the audit log records: uvicorn, left to itself, believes the header from
127.0.0.1."""

import asyncio
import re
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from uvicorn.main import main as uvicorn_cli
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from lexweb import launcher
from tests.harness.product import prepare_var
from tests.lexweb.test_settings import _settings_probe
from tests.running import (
    ADMIN_PASSWORD,
    START_TIMEOUT,
    free_port,
    launch,
    launcher_env,
    read_until,
)

FORGED = "203.0.113.9"


def _uvicorn_options(argv: list[str]) -> dict[str, object]:
    """What uvicorn's own command line makes of the launcher's web command."""
    assert argv[1:4] == ["-m", "uvicorn", "lexweb.asgi:application"]
    context = uvicorn_cli.make_context("uvicorn", argv[3:])
    return dict(context.params)


def test_no_trusted_proxy_named_means_no_forwarded_header_is_believed() -> None:
    options = _uvicorn_options(launcher._web_argv("127.0.0.1", 8000, []))
    assert options["proxy_headers"] is False


def test_the_web_server_keeps_idle_connections_longer_than_clients_do() -> None:
    """A client's pooled connection must be closed by the client first: uvicorn's own 5 s met
    requests sent on connections idle just over 5 s (httpx's pool keeps them 5 s)."""
    options = _uvicorn_options(launcher._web_argv("127.0.0.1", 8000, []))
    assert options["timeout_keep_alive"] == launcher.KEEP_ALIVE_SECONDS
    assert httpx.Limits().keepalive_expiry + 5 < launcher.KEEP_ALIVE_SECONDS


def test_forwarded_headers_are_believed_only_from_the_named_proxies() -> None:
    argv = launcher._web_argv("127.0.0.1", 8000, ["10.0.0.5", "10.1.0.0/24"])
    options = _uvicorn_options(argv)
    assert options["proxy_headers"] is True
    # Named on the command line, so uvicorn's FORWARDED_ALLOW_IPS (whose absence means
    # 127.0.0.1) cannot widen it.
    assert options["forwarded_allow_ips"] == "10.0.0.5,10.1.0.0/24"
    # What uvicorn then makes of a request's X-Forwarded-For, by the peer it came from.
    trusted = str(options["forwarded_allow_ips"])
    assert _client_seen(trusted, peer="10.1.0.7") == FORGED
    assert _client_seen(trusted, peer="10.0.0.5") == FORGED
    assert _client_seen(trusted, peer="127.0.0.1") == "127.0.0.1"
    assert _client_seen(trusted, peer="10.2.0.1") == "10.2.0.1"


def _client_seen(trusted: str, *, peer: str) -> str:
    """The client address the application gets behind uvicorn's proxy-header middleware."""
    seen: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope["client"][0])

    scope = {
        "type": "http",
        "client": (peer, 50000),
        "headers": [(b"x-forwarded-for", FORGED.encode())],
    }
    asyncio.run(ProxyHeadersMiddleware(app, trusted_hosts=trusted)(scope, None, None))  # type: ignore[arg-type]
    return seen[0]


@pytest.mark.slow
def test_the_setting_takes_addresses_and_networks_only() -> None:
    listed = _settings_probe(
        {"LEXWEB_TRUSTED_PROXIES": "10.0.0.5, 10.1.0.0/24,::1"}, "settings.LEXWEB_TRUSTED_PROXIES"
    )
    assert listed.stdout.strip() == "['10.0.0.5', '10.1.0.0/24', '::1']", listed.stderr
    assert _settings_probe({}, "settings.LEXWEB_TRUSTED_PROXIES").stdout.strip() == "[]"
    for bad in ("*", "proxy.firm.lan"):
        refused = _settings_probe({"LEXWEB_TRUSTED_PROXIES": bad}, "settings.DEBUG")
        assert refused.returncode != 0
        assert "LEXWEB_TRUSTED_PROXIES lists addresses or networks" in refused.stderr


def _csrf(client: httpx.Client) -> str:
    page = client.get("/accounts/login/")
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


def _sign_in(client: httpx.Client, email: str, password: str, forwarded_for: str) -> int:
    token = _csrf(client)
    response = client.post(
        "/accounts/login/",
        data={"csrfmiddlewaretoken": token, "username": email, "password": password},
        headers={"X-Forwarded-For": forwarded_for},
    )
    return response.status_code


@pytest.mark.product
def test_a_local_client_cannot_choose_its_throttled_and_audited_address(var_dir: Path) -> None:
    """`make run` with LEXWEB_TRUSTED_PROXIES unset, even with uvicorn's own FORWARDED_ALLOW_IPS
    set to trust everyone: a client on 127.0.0.1 that names another address in every request is
    still throttled and audited as 127.0.0.1."""
    prepare_var(var_dir)  # a launch, not a first start: migrated, static files collected
    port = free_port()
    env = launcher_env(
        var_dir,
        port,
        LEXWEB_DEMO_DATA="false",
        LEXWEB_SIGNIN_ADDRESS_ATTEMPTS="2",
        LEXWEB_API_BAD_TOKEN_ATTEMPTS="2",
        FORWARDED_ALLOW_IPS="*",
    )
    env.pop("LEXWEB_TRUSTED_PROXIES", None)
    server = launch(["run"], env)
    base = f"http://127.0.0.1:{port}"
    try:
        read_until(server, "running at", timeout=START_TIMEOUT)
        with httpx.Client(base_url=base, timeout=30) as admin:
            # A success gives its attempt back: the admin's sign-in spends none of the budget.
            assert _sign_in(admin, "admin@lexweb.local", ADMIN_PASSWORD, "203.0.113.200") == 302

            # Each failed attempt claims another address; all are counted against 127.0.0.1.
            statuses = []
            for n in range(3):
                with httpx.Client(base_url=base, timeout=30) as attacker:
                    forged = f"203.0.113.{9 + n}"
                    statuses.append(_sign_in(attacker, f"nobody{n}@firm.test", "wrong", forged))
            assert statuses == [200, 200, 429]

            bad_tokens = [
                httpx.get(
                    f"{base}/api/v1/me",
                    headers={
                        "Authorization": f"Bearer lxw_bad_{n}",
                        "X-Forwarded-For": f"203.0.113.{20 + n}",
                    },
                    timeout=30,
                ).status_code
                for n in range(3)
            ]
            assert bad_tokens == [401, 401, 429]

            audit = admin.get("/admin/accounts/auditevent/", params={"q": "auth.login"})
            assert audit.status_code == 200, audit.text
            assert "auth.login_failed" in audit.text and "auth.login_throttled" in audit.text
            assert "127.0.0.1" in audit.text
            assert "203.0.113." not in audit.text
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    rest = server.stdout.read() if server.stdout else ""
    assert server.returncode == 0, rest
