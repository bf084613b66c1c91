"""50 concurrent API clients (issue 22, Performance): requests/s and latency of the API's list,
detail and event endpoints served as the product serves them, against a minimal Django view
reading the same rows (the peer) in the same run.

Ours: the real ASGI app (lexweb.asgi, uvicorn started exactly as `make run` starts the web
process, lexweb.launcher._web_argv, one process) on a case of DOCUMENTS documents and EVENTS
case events; CLIENTS concurrent clients (httpx, async, one process), each a member lawyer with a
Bearer token, each asking in turn `GET /api/v1/cases/{id}/documents?limit=50` (list),
`GET /api/v1/cases/{id}/documents/{doc}` (detail, a document at random) and
`GET /api/v1/cases/{id}/events?after=N&limit=50` (events), as fast as answers come, for
DURATION seconds after WARMUP seconds not counted.

Peer, in the same run: the same uvicorn and Django settings (middleware included) serving this
module's urlconf instead of the product's: three plain Django views reading the same rows with
`.values()` and answering with JsonResponse (the list with its count, like the API's
`{items, count}`). The peer does none of the API's work but reading: no token check, no case
access check, no audit row, no provenance, no schema validation. The two servers run one after
the other, never together.

Measured, per endpoint and all together: requests/s, p50/p95/p99 latency in ms (target: p99
under 150 ms), errors (any status but 200), and ratios ours/peer. The load average before and
after is printed with the figures: the development machine has 2 cores and is shared, and the
clients run on the same cores as the server.

Prints one JSON object. Run with `make bench` (or `python -m bench.bench_api_clients` with
DATABASE_URL set to a migrated database of its own; it writes a user, a case, documents and
events, made once and reused).
"""

import asyncio
import json
import os
import random
import statistics
import sys
import time
from datetime import timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

import httpx  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.db import transaction  # noqa: E402
from django.http import HttpRequest, JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.utils import timezone  # noqa: E402

from apps.accounts import services as account_services  # noqa: E402
from apps.accounts.models import User  # noqa: E402
from apps.cases.models import Case, CaseEvent, Membership  # noqa: E402
from apps.documents.models import Blob, Document  # noqa: E402
from bench.serving import free_port, served  # noqa: E402
from lexweb import launcher  # noqa: E402

CLIENTS = int(os.environ.get("BENCH_API_CLIENTS", "50"))
DURATION = float(os.environ.get("BENCH_API_DURATION", "20"))
WARMUP = 3.0
DOCUMENTS = 500
EVENTS = 500
PAGE = 50
TARGET_P99_MS = 150.0
CASE_NUMBER = "BENCH-API-CLIENTS"
ENDPOINTS = ("list", "detail", "events")


# --- The peer: minimal Django views over the same rows ------------------------------------------

DOCUMENT_FIELDS = (
    "id", "filename", "kind", "content_type", "origin", "custodian", "status", "error",
    "page_count", "pages_done", "created_at", "blob__sha256", "blob__size",
)  # fmt: skip


def peer_documents(request: HttpRequest, case_id: int) -> JsonResponse:
    rows = Document.objects.filter(case_id=case_id).order_by("-created_at", "-pk")
    limit = min(int(request.GET.get("limit", PAGE)), 100)
    items = list(rows.values(*DOCUMENT_FIELDS)[:limit])
    return JsonResponse({"items": items, "count": rows.count()})


def peer_document(request: HttpRequest, case_id: int, document_id: int) -> JsonResponse:
    row = Document.objects.filter(case_id=case_id, pk=document_id).values(*DOCUMENT_FIELDS).first()
    if row is None:
        return JsonResponse({"code": "not_found"}, status=404)
    return JsonResponse(row)


def peer_events(request: HttpRequest, case_id: int) -> JsonResponse:
    after = int(request.GET.get("after", 0))
    limit = min(int(request.GET.get("limit", PAGE)), 100)
    rows = CaseEvent.objects.filter(case_id=case_id, seq__gt=after).order_by("seq")
    items = list(rows.values("seq", "kind", "payload", "created_at")[:limit])
    return JsonResponse({"items": items, "count": rows.count()})


urlpatterns = [
    path("api/v1/cases/<int:case_id>/documents", peer_documents),
    path("api/v1/cases/<int:case_id>/documents/<int:document_id>", peer_document),
    path("api/v1/cases/<int:case_id>/events", peer_events),
]


def peer_app():  # type: ignore[no-untyped-def]
    """The peer's ASGI app (uvicorn --factory): Django with this module as its urlconf."""
    settings.ROOT_URLCONF = "bench.bench_api_clients"
    return get_asgi_application()


# --- Data, servers, clients ---------------------------------------------------------------------


def _corpus() -> tuple[Case, list[int], str]:
    """The bench case (made once), its document ids, and a new token of its lawyer."""
    case = Case.objects.filter(number=CASE_NUMBER).first()
    if case is None:
        with transaction.atomic():
            user = User.objects.create_user(
                f"api{time.time_ns()}@bench.test", None, full_name="API bench", role="lawyer"
            )
            case = Case.objects.create(
                title="API clients bench", number=CASE_NUMBER, client="B", created_by=user
            )
            Membership.objects.create(case=case, user=user, role="lawyer")
            salt = time.time_ns()
            blobs = Blob.objects.bulk_create(
                Blob(sha256=f"{salt:032x}{n:032x}", size=10_000 + n) for n in range(DOCUMENTS)
            )
            start = timezone.now()
            Document.objects.bulk_create(
                Document(
                    case=case, blob=blob, filename=f"memo-{n}.pdf", kind="pdf",
                    content_type="application/pdf", origin="client", custodian="Jane Roe",
                    status="ready", page_count=3, pages_done=3, uploaded_by=user,
                    created_at=start - timedelta(minutes=n),
                )
                for n, blob in enumerate(blobs)
            )  # fmt: skip
            CaseEvent.objects.bulk_create(
                CaseEvent(
                    case=case, seq=n + 1, kind="cases.notice",
                    payload={"type": "cases.notice", "case_id": case.pk, "level": "info",
                             "message": f"bench event {n}", "at": start.isoformat()},
                )
                for n in range(EVENTS)
            )  # fmt: skip
    ids = list(Document.objects.filter(case=case).values_list("pk", flat=True))
    user = case.created_by
    secret = account_services.token_create(user=user, name=f"bench {time.time_ns()}").secret
    return case, ids, secret


async def _load(base: str, case_id: int, ids: list[int], secret: str) -> dict[str, object]:
    samples: dict[str, list[float]] = {name: [] for name in ENDPOINTS}
    errors: dict[str, int] = dict.fromkeys(ENDPOINTS, 0)
    limits = httpx.Limits(max_connections=CLIENTS + 5, max_keepalive_connections=CLIENTS + 5)
    headers = {"Authorization": f"Bearer {secret}"}
    started = time.monotonic()
    counting_from = started + WARMUP
    stop = counting_from + DURATION

    async def client(n: int, http: httpx.AsyncClient) -> None:
        rng = random.Random(n)  # noqa: S311  (a request mix, not a secret)
        turn = n
        while (now := time.monotonic()) < stop:
            name = ENDPOINTS[turn % len(ENDPOINTS)]
            turn += 1
            if name == "list":
                url = f"/api/v1/cases/{case_id}/documents?limit={PAGE}"
            elif name == "detail":
                url = f"/api/v1/cases/{case_id}/documents/{rng.choice(ids)}"
            else:
                after = rng.randrange(EVENTS - PAGE)
                url = f"/api/v1/cases/{case_id}/events?after={after}&limit={PAGE}"
            sent = time.perf_counter()
            response = await http.get(url)
            elapsed = (time.perf_counter() - sent) * 1000
            if now >= counting_from:
                if response.status_code == 200:
                    samples[name].append(elapsed)
                else:
                    errors[name] += 1

    async with httpx.AsyncClient(
        base_url=base, headers=headers, limits=limits, timeout=60.0
    ) as http:
        await asyncio.gather(*(client(n, http) for n in range(CLIENTS)))
    every = [s for name in ENDPOINTS for s in samples[name]]
    figures: dict[str, object] = {"all": _figures(every, sum(errors.values()))}
    for name in ENDPOINTS:
        figures[name] = _figures(samples[name], errors[name])
    return figures


def _figures(samples: list[float], errors: int) -> dict[str, object]:
    if len(samples) < 2:
        return {"requests": len(samples), "errors": errors}
    cuts = statistics.quantiles(samples, n=100)
    return {
        "requests": len(samples),
        "errors": errors,
        "requests_per_second": round(len(samples) / DURATION, 1),
        "p50_ms": round(cuts[49], 1),
        "p95_ms": round(cuts[94], 1),
        "p99_ms": round(cuts[98], 1),
    }


def _serve_and_load(argv: list[str], port: int, case: Case, ids: list[int], secret: str) -> dict:
    with served(argv, port):
        return asyncio.run(_load(f"http://127.0.0.1:{port}", case.pk, ids, secret))


def main() -> None:
    case, ids, secret = _corpus()
    load_before = os.getloadavg()
    port = free_port()
    ours = _serve_and_load(
        launcher._web_argv("127.0.0.1", port, settings.LEXWEB_TRUSTED_PROXIES), port, case, ids,
        secret,
    )  # fmt: skip
    port = free_port()
    peer_argv = [sys.executable, "-m", "uvicorn", "bench.bench_api_clients:peer_app", "--factory"]
    peer_argv += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    peer_argv += ["--lifespan", "off", "--no-proxy-headers", "--log-level", "warning"]
    peer = _serve_and_load(peer_argv, port, case, ids, secret)
    ratios = {}
    for name in ("all", *ENDPOINTS):
        a, b = ours[name], peer[name]
        assert isinstance(a, dict) and isinstance(b, dict)
        if "p99_ms" in a and "p99_ms" in b:
            ratios[name] = {
                "requests_per_second": round(
                    a["requests_per_second"] / b["requests_per_second"], 3
                ),
                "p99": round(a["p99_ms"] / b["p99_ms"], 3),
            }
    all_ours = ours["all"]
    assert isinstance(all_ours, dict)
    print(
        json.dumps(
            {
                "benchmark": "api_concurrent_clients",
                "clients": CLIENTS,
                "duration_s": DURATION,
                "documents": len(ids),
                "events": EVENTS,
                "database": settings.DATABASES["default"]["NAME"],
                "ours": ours,
                "peer": "minimal Django views (.values(), JsonResponse), same uvicorn, settings",
                "peer_figures": peer,
                "ratio_to_peer": ratios,
                "target_p99_ms": TARGET_P99_MS,
                "p99_under_target": all_ours.get("p99_ms", 1e9) < TARGET_P99_MS,
                "loadavg_before": [round(x, 2) for x in load_before],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                "cpu_count": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
