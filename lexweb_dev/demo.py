"""The demo of `make run` (on with LEXWEB_DEMO_DATA): a demo case with a demo lawyer and its
evidence (lexweb_dev.demo_evidence: documents, a Bates production, a frozen packet), and the
demo cluster, which is the reference site of DESIGN.md with its backends played by local fake
backends on 127.0.0.1 (`manage.py demo_backends`) in demo-writer mode: they write from the
excerpts they are given (lexweb_dev.fakebackend.writer). They are stand-ins, not models."""

from django.conf import settings

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import services as case_services
from apps.cases.models import Case
from apps.cluster.models import Backend
from apps.cluster.services import site
from lexweb_dev import demo_evidence
from lexweb_dev.fakebackend.config import FakeSettings

REFERENCE_SITE = settings.BASE_DIR / "examples" / "reference_site.yaml"
DEMO_NUMBER = "DEMO-2026-001"
DEMO_COURT = "Demonstration District Court"
DEMO_LAWYER = "dana.lawyer@lexweb.local"

# The reference speeds of the reference site (tokens/s; DESIGN.md and issue 12): drafter on
# board A ~90, reasoner on board B ~50, gate (pair 0-1) and adversary (pair 2-3) ~60, the
# Ollama extractor ~113. Other models get DEMO_DEFAULT_SPEED.
DEMO_SPEEDS = {
    "qwen3.6-35b-a3b": 90.0,
    "qwen3.5-122b-a10b": 50.0,
    "qwen3-4b": 60.0,
    "gemma-4-26b-a4b": 60.0,
    "gemma4:26b": 113.0,
}
DEMO_DEFAULT_SPEED = 60.0


def demo_case_create(*, lawyer_password: str | None = None) -> Case | None:
    """The demo case with the first active admin and a demo lawyer as members, once. None when
    there is no admin yet or the case exists already. A demo lawyer made here gets
    `lawyer_password` (None: no password, cannot sign in until an admin sets one)."""
    admin = User.objects.filter(role=User.Role.ADMIN, is_active=True).order_by("pk").first()
    if admin is None or Case.objects.filter(number=DEMO_NUMBER).exists():
        return None
    lawyer = User.objects.filter(email=DEMO_LAWYER).first() or account_services.user_create(
        email=DEMO_LAWYER,
        full_name="Dana Lawyer (demo)",
        role=User.Role.LAWYER,
        password=lawyer_password,
        actor=admin,
    )
    case = case_services.case_create(
        actor=admin,
        title="Acme Corp. v. Widget Ltd. (demo)",
        number=DEMO_NUMBER,
        court=DEMO_COURT,
        client="Acme Corp.",
    )
    case_services.member_add(actor=admin, case=case, email=lawyer.email, role="lawyer")
    return case


def demo_evidence_seed() -> int | None:
    """The demo case's documents, uploaded by the demo lawyer (or, gone, the case's creator),
    and the job that stamps and freezes them once they are read (lexweb_dev.demo_evidence).
    None when there is no demo case; else how many documents were uploaded now."""
    case = Case.objects.filter(number=DEMO_NUMBER).select_related("created_by").first()
    if case is None:
        return None
    member = case.memberships.filter(user__email=DEMO_LAWYER, user__is_active=True).first()
    user = member.user if member is not None else case.created_by
    return demo_evidence.demo_documents_seed(case=case, user=user)


def site_load_demo(*, text: str, port_base: int) -> site.SiteLoaded:
    """The demo: a site description (the reference site) whose backends are replaced by local
    fake backends on 127.0.0.1, ports `port_base`, `port_base + 1`, … in file order (started
    by `manage.py demo_backends`). API keys are dropped: the fakes need none."""
    parsed = site.site_parse(text)
    urls = _demo_urls(parsed, port_base)
    local = [
        backend.model_copy(update={"url": urls[backend.name], "api_key": ""})
        for backend in parsed.backends
    ]
    return site.site_write(
        site=parsed.model_copy(update={"backends": local}), actor=None, label="demo data"
    )


def demo_backend_urls(*, text: str, port_base: int) -> dict[str, str]:
    """Backend name → the local address the demo gives it. `demo_backends` plays only backends
    still configured exactly so, never a firm's own backend that happens to be on 127.0.0.1."""
    return _demo_urls(site.site_parse(text), port_base)


def demo_backend_plan(*, text: str, port_base: int) -> list[tuple[str, int, FakeSettings]]:
    """(name, port, fake) for each enabled backend still configured exactly as the demo made
    it: a fake must never answer in place of one of the firm's own servers. The fake plays
    the backend's kind, slots, first model and that model's context."""
    urls = demo_backend_urls(text=text, port_base=port_base)
    plan: list[tuple[str, int, FakeSettings]] = []
    for backend in Backend.objects.filter(name__in=urls, enabled=True).order_by("name"):
        deployment = backend.deployments.order_by("pk").first()
        if backend.base_url != urls[backend.name] or deployment is None:
            continue
        fake = FakeSettings(
            kind=backend.kind,  # type: ignore[arg-type]  # Backend.Kind values are the fake's
            model=deployment.model_name,
            tokens_per_second=DEMO_SPEEDS.get(deployment.model_name, DEMO_DEFAULT_SPEED),
            slots=backend.slots,
            n_ctx_per_slot=deployment.context_per_slot,
            max_tokens_default=256,
            demo_writer=True,  # the demo's models write from the excerpts they are given
        )
        plan.append((backend.name, port_base + list(urls).index(backend.name), fake))
    return plan


def _demo_urls(parsed: site.SiteIn, port_base: int) -> dict[str, str]:
    return {b.name: f"http://127.0.0.1:{port_base + n}" for n, b in enumerate(parsed.backends)}
