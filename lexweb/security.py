"""Response headers that keep client material out of other sites' reach and out of caches.

1. Every response gets a Content-Security-Policy. Our own pages load only our own scripts and
   styles (`static/lexweb/`), with no inline script, no inline style and no `style=""`
   attribute: an injected `<script>` or `<style>` in a page does nothing.
2. Paths that we do not write ourselves get a policy just wide enough for them:
   - `/admin/` (Django's admin) needs nothing more than our pages: it loads its scripts and
     styles from files, and the one `<style>` block Django can write (change lists of a model
     with `actions_on_top` and `actions_on_bottom` both off) is written by none of ours.
     The job queue's admin (`/admin/procrastinate/`) is Django's too: its package's columns
     and inline, which wrote `style=""` attributes, are replaced by ours in words
     (apps/operations/admin.py), which write none.
   - `/api/v1/docs` (Swagger UI, served from ninja's static files): its stylesheet draws its
     icons from `data:` SVG images, so `img-src` adds `data:` there.
3. Every response that is not a static file gets `Cache-Control: no-store`: pages, the API,
   downloads of originals and volumes, and the page that shows a new token's secret all carry
   client material or secrets, and must not be kept by the browser or a proxy. Static files keep
   the long-lived caching whitenoise gives them.

The middleware sits first in MIDDLEWARE, so it also sees static files (whitenoise answers them
before the rest of the stack) and the error pages every inner layer turns exceptions into.
"""

import base64
import hashlib
from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

_BASE: dict[str, str] = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self'",
    "font-src": "'self'",
    # 'self' covers ws:// and wss:// of the same host (CSP Level 3): the live-update sockets.
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}

ADMIN_PREFIX = "/admin/"
API_DOCS_PATH = "/api/v1/docs"


def _policy(**extra: str) -> str:
    directives = {**_BASE, **{name.replace("_", "-"): value for name, value in extra.items()}}
    return "; ".join(f"{name} {value}" for name, value in directives.items())


def inline_hash(text: str) -> str:
    """The CSP source expression that allows exactly this inline block."""
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


PAGE_POLICY = ADMIN_POLICY = _policy()
API_DOCS_POLICY = _policy(img_src="'self' data:")


def policy_for(path: str) -> str:
    """The Content-Security-Policy sent for a request to `path`."""
    if path.startswith(ADMIN_PREFIX):
        return ADMIN_POLICY
    if path == API_DOCS_PATH:
        return API_DOCS_POLICY
    return PAGE_POLICY


def is_static(path: str) -> bool:
    return path.startswith(settings.STATIC_URL)


def _secure(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    response["Content-Security-Policy"] = policy_for(request.path)
    if not is_static(request.path):
        response["Cache-Control"] = "no-store"
        # HTTP/1.0 caches know only these two.
        response["Pragma"] = "no-cache"
        if "Expires" in response:
            del response["Expires"]
    return response


class SecurityHeadersMiddleware:
    """Adds the headers described in this module's docstring; works under WSGI and ASGI."""

    sync_capable = True
    async_capable = True

    def __init__(
        self,
        get_response: Callable[[HttpRequest], HttpResponseBase | Awaitable[HttpResponseBase]],
    ) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self.__acall__(request)
        response = self.get_response(request)
        assert isinstance(response, HttpResponseBase)  # noqa: S101  (sync chain)
        return _secure(request, response)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        assert not isinstance(response, HttpResponseBase)  # noqa: S101  (async chain)
        return _secure(request, await response)
