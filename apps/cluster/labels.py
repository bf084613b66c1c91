"""How a backend's failure is told to people: by the deployment and role it failed for, never by
the backend's address.

The backend clients name a backend by its URL (`streams.describe`), and httpx's and the
socket's errors quote hosts, ports and other URLs. Those texts are kept whole only in the call
record (`CallRecord.error`), which the admin shows to admins. Every other place a backend's
failure reaches (stage and run errors, run events, API bodies, pages, the health registry, the
verifier's second-opinion reason) gets it through this module:

- `public_backend_message(message, backend, name=...)`: the backend's URL (as configured, or as
  the clients write it) becomes `name`, any other URL "[URL]", the backend's host (with or
  without a port) "[host]", any IP address "[address]", the API key "[API key]"; one line, cut
  to `limit` characters.
- `deployment_label(deployment, role)`: "the drafter on board A of threadripper (deployment
  qwen3.6-35b-a3b on llama-board-a)".
- `deployment_message(message, deployment=, role=)`: the message scrubbed as above, with the
  label where the backend's URL or the deployment's own name stood, or in front of it where
  the message named neither.
- `scrub_addresses(message, backends)`: any text (an unexpected error's first line) without URLs,
  IP addresses or the hosts of `backends`.
- `error_relabel(error, ...)`: a BackendError's message made a `deployment_message`, in place
  (dispatch does it after writing the raw message into the call record).

A leaf module: it imports only cluster's models, the backends' base types and lexweb.text.
"""

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from apps.cluster.backends.base import BackendError
from apps.cluster.models import Backend, Deployment, Role
from lexweb.errors import DomainError
from lexweb.text import one_line

# Stage and run errors hold up to 4,000 characters; a backend's own message is cut at 200 by
# the clients, so a named one is far below this.
MESSAGE_CHARS = 1000

# Any URL at all ("scheme://..."): a proxy's error page may name other addresses too.
_ANY_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]]*")
# "10.0.0.5", "10.0.0.5:8080": a socket error quotes the address a name resolved to.
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?(?![\w.])")
# "[fd00::7]:8080" as URLs and httpx write it, and "fd00::7" as a socket error does. Bare, it
# must hold "::" or a hex letter, so that a time ("12:30:45") is not taken for one.
_IPV6 = re.compile(
    r"\[[0-9A-Fa-f]*:[0-9A-Fa-f:.]*\](?::\d{1,5})?"
    r"|(?<![\w:.])(?=[0-9A-Fa-f:]*(?:::|[A-Fa-f]))"
    r"(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])"
)
# Stands for the name while the rest is scrubbed, so that a name that looks like a host (a host
# called "threadripper" beside a backend at http://threadripper:8081) is not scrubbed itself.
_NAME = "\ue000"


def public_backend_message(
    message: str,
    backend: Backend,
    *,
    name: str = "",
    limit: int = MESSAGE_CHARS,
    aliases: Iterable[str] = (),
) -> str:
    """`message` fit to show anyone (see the module docstring). `name` (default "backend
    <its name>") stands where the backend's URL, or one of `aliases`, stood."""
    text = (message or "").replace(_NAME, "")
    # The clients never put the key in a message; this keeps it so if one ever echoes a
    # request back (a proxy's error page, say).
    if backend.api_key:
        text = text.replace(backend.api_key, "[API key]")
    base = backend.base_url or ""
    known = {base, base.rstrip("/"), backend.address, backend.address.rstrip("/"), *aliases}
    for url in sorted((k for k in known if k), key=len, reverse=True):
        text = text.replace(url, _NAME)
    text = scrub_addresses(text, [backend], limit=None)
    return one_line(text.replace(_NAME, name or f"backend {backend.name}"), limit)


def scrub_addresses(
    message: str, backends: Iterable[Backend] = (), *, limit: int | None = MESSAGE_CHARS
) -> str:
    """`message` without any URL, IP address, or host of `backends` (with its port)."""
    text = _ANY_URL.sub("[URL]", message or "")
    for backend in backends:
        host = _host(backend)
        if len(host) >= 2:
            # The host on its own, as in "Connect call failed ('10.0.0.5', 8080)".
            pattern = rf"(?<![\w.-]){re.escape(host)}(?::\d+)?(?![\w-])"
            text = re.sub(pattern, "[host]", text, flags=re.IGNORECASE)
    text = _IPV4.sub("[address]", _IPV6.sub("[address]", text))
    return text if limit is None else one_line(text, limit)


def _host(backend: Backend) -> str:
    try:
        return urlsplit(backend.base_url or "").hostname or ""
    except ValueError:  # a malformed IPv6 literal: nothing to look for
        return ""


def deployment_label(deployment: Deployment, role: str = "") -> str:
    """What the deployment does, where it runs, and its own name; no address: "the drafter on
    board A of threadripper (deployment qwen3.6-35b-a3b on llama-board-a)"."""
    if deployment.backend.board_id is None:  # an unsaved row
        return f"{role_noun(role)} (deployment {deployment})"
    board = deployment.backend.board
    return f"{role_noun(role)} on board {board.name} of {board.host.name} (deployment {deployment})"


def role_noun(role: str) -> str:
    """The role as a noun: "the drafter", "the heavy reasoner", "the gate"; "the model" for
    no role."""
    try:
        label = Role(role).label
    except ValueError:
        return "the model"
    return f"the {label.split(' (')[0].lower()}"


def deployment_message(
    message: str, *, deployment: Deployment, role: str = "", limit: int = MESSAGE_CHARS
) -> str:
    """A backend's `message` about a call to `deployment` for `role`, told by the deployment's
    label (see the module docstring). Idempotent: a message named once is left as it is."""
    label = deployment_label(deployment, role)
    # The label first (longest first): a message named already keeps its one label.
    aliases = [label, label[:1].upper() + label[1:], str(deployment)]
    text = public_backend_message(
        message, deployment.backend, name=label, aliases=aliases, limit=limit
    )
    if label not in text:
        text = f"{label}: {text}" if text else f"{label} failed."
    return one_line(text[:1].upper() + text[1:], limit)


def error_relabel(error: BackendError, *, deployment: Deployment, role: str = "") -> None:
    """Make `error`'s message a `deployment_message`, keeping its type, its attributes (a
    ContextOverflow's counts) and its chained cause (`backend_answered` reads it)."""
    message = deployment_message(str(error), deployment=deployment, role=role)
    error.args = (message,)
    if isinstance(error, DomainError):
        error.message = message
