"""Writes for cases and their members."""

import socket
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import events, selectors
from apps.cases.models import BreakGlassGrant, Case, Membership
from lexweb.errors import Conflict, DomainError, NotFound, PermissionDenied
from lexweb.jobs import job_defer

_TEXT_LIMITS = {"title": 300, "number": 100, "court": 200, "client": 200}


def _clean_case_fields(fields: dict[str, str]) -> dict[str, str]:
    cleaned: dict[str, str] = {}
    for name, value in fields.items():
        value = " ".join(value.split())
        if len(value) > _TEXT_LIMITS[name]:
            raise DomainError(f"The {name} is at most {_TEXT_LIMITS[name]} characters.")
        if not value and name != "court":
            raise DomainError(f"The case needs a {name}.")
        cleaned[name] = value
    return cleaned


def _number_taken(*, actor: User, number: str, court: str, exclude_id: int | None = None) -> bool:
    """Whether a case the actor can see already has this number in this court.

    Cases the actor cannot see are not looked at: a refusal would tell them that the firm has
    that matter. Two teams may then each open the same court number (each sees only its own).
    Call inside the transaction that writes: the advisory lock makes two concurrent writes of
    the same number queue here, so the one that comes second sees the first.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtext(%s))",
            [f"lexweb.case_number:{court.lower()}:{number.lower()}"],
        )
    clash = selectors.case_list_for_user(user=actor).filter(
        number__iexact=number, court__iexact=court
    )
    if exclude_id is not None:
        clash = clash.exclude(pk=exclude_id)
    return clash.exists()


@transaction.atomic
def case_create(*, actor: User, title: str, number: str, client: str, court: str = "") -> Case:
    """Open a case. Its creator becomes its first member (as lawyer, if they are one)."""
    if not selectors.user_can_create_case(user=actor):
        raise PermissionDenied("Only lawyers and admins open cases.")
    fields = _clean_case_fields(
        {"title": title, "number": number, "client": client, "court": court}
    )
    if _number_taken(actor=actor, number=fields["number"], court=fields["court"]):
        raise Conflict(f"Case {fields['number']} already exists in that court (one of yours).")
    case = Case.objects.create(created_by=actor, **fields)
    role = Membership.Role.LAWYER if actor.role == User.Role.LAWYER else Membership.Role.STAFF
    Membership.objects.create(case=case, user=actor, role=role)
    account_services.audit_record(actor=actor, action="case.create", case=case, target=case)
    return case


@transaction.atomic
def case_update(*, actor: User, case: Case, changes: dict[str, str]) -> Case:
    """Change a case's text fields or status. Any member may; lawyers and admins in practice.
    Not an admin who reaches the case by break-glass (read access only)."""
    _require_writer(actor=actor, case=case)
    allowed = set(_TEXT_LIMITS) | {"status"}
    unknown = set(changes) - allowed
    if unknown:
        raise DomainError(f"Cannot change {', '.join(sorted(unknown))}.")
    case = Case.objects.select_for_update().get(pk=case.pk)
    if "status" in changes and changes["status"] not in Case.Status.values:
        raise DomainError(f"Unknown status {changes['status']!r}.")
    wanted = _clean_case_fields({k: v for k, v in changes.items() if k in _TEXT_LIMITS})
    if "status" in changes:
        wanted["status"] = changes["status"]
    changed = sorted(name for name, value in wanted.items() if getattr(case, name) != value)
    if not changed:
        # Nothing to write and nothing to audit: a no-op PATCH leaves no trace.
        return case
    for name in changed:
        setattr(case, name, wanted[name])
    if _number_taken(actor=actor, number=case.number, court=case.court, exclude_id=case.pk):
        raise Conflict(f"Case {case.number} already exists in that court (one of yours).")
    case.save()
    account_services.audit_record(
        actor=actor,
        action="case.update",
        case=case,
        target=case,
        detail={"fields": ",".join(changed)},
    )
    return case


BREAK_GLASS_READ_ONLY = (
    "Break-glass access is read-only: ask a lawyer on this case to make the change."
)


def _require_writer(*, actor: User, case: Case) -> None:
    """Refuse a change by an admin who reaches the case only through break-glass."""
    if selectors.case_reached_by_break_glass_only(user=actor, case=case):
        raise PermissionDenied(BREAK_GLASS_READ_ONLY)


def _require_manager(*, actor: User, case: Case) -> None:
    if not selectors.case_can_manage_members(user=actor, case=case):
        _require_writer(actor=actor, case=case)
        raise PermissionDenied("Only lawyers on this case manage its members.")


def _check_rescue(*, actor: User, user: User, role: str) -> None:
    """An admin rescuing a case with no active lawyer (selectors.case_can_rescue) adds a
    lawyer, as lawyer: never themselves, and nothing else."""
    if user.pk == actor.pk or role != Membership.Role.LAWYER:
        raise PermissionDenied(
            "This case has no active lawyer: an admin may only add a lawyer to it, as lawyer, "
            "who then manages its members."
        )


def _check_role(*, user: User, role: str) -> None:
    if role not in Membership.Role.values:
        raise DomainError(f"Unknown case role {role!r}; use lawyer or staff.")
    if role == Membership.Role.LAWYER and user.role != User.Role.LAWYER:
        raise DomainError(f"{user} is not a lawyer and cannot hold the lawyer role on a case.")


@transaction.atomic
def member_add(
    *, actor: User, case: Case, role: str, email: str = "", user_id: int | None = None
) -> Membership:
    """Add a member, named by e-mail or (from the member picker) by `user_id`. A lawyer member
    of the case may; so may an admin rescuing a case with no active lawyer, by adding a lawyer
    (recorded with `rescue`). Nobody else: not an admin member, nor a break-glass grant (read
    access only)."""
    rescue = not selectors.case_can_manage_members(user=actor, case=case)
    if rescue and not selectors.case_can_rescue(user=actor, case=case):
        _require_manager(actor=actor, case=case)
    if user_id is not None:
        user = User.objects.filter(pk=user_id, is_active=True).first()
        if user is None:
            raise NotFound("That person has no active account.")
    else:
        user = User.objects.filter(email__iexact=email.strip(), is_active=True).first()
        if user is None:
            raise NotFound(f"No active user with e-mail {email.strip()[:254]!r}.")
    _check_role(user=user, role=role)
    if rescue:
        _check_rescue(actor=actor, user=user, role=role)
    if Membership.objects.filter(case=case, user=user).exists():
        raise Conflict(f"{user} is already a member of this case.")
    try:
        with transaction.atomic():
            membership = Membership.objects.create(case=case, user=user, role=role)
    except IntegrityError:
        # Two managers adding the same person at the same moment: the second one loses.
        raise Conflict(f"{user} is already a member of this case.") from None
    detail: dict[str, str | int | bool | None] = {"role": role}
    if rescue:
        detail["rescue"] = True
    account_services.audit_record(
        actor=actor, action="case.member_add", case=case, target=membership, detail=detail
    )
    _notice(case=case, message=f"{user} joined the case as {role}.")
    return membership


def _lawyer_count(case: Case) -> int:
    return Membership.objects.filter(case=case, role=Membership.Role.LAWYER).count()


def _locked_membership(*, case: Case, user_id: int) -> Membership:
    # Lock every membership row of the case: "last lawyer" checks must see a stable set.
    rows = list(Membership.objects.select_for_update().filter(case=case).select_related("user"))
    for row in rows:
        if row.user_id == user_id:
            return row
    raise NotFound(f"User {user_id} is not a member of this case.")


@transaction.atomic
def member_change_role(*, actor: User, case: Case, user_id: int, role: str) -> Membership:
    _require_manager(actor=actor, case=case)
    membership = _locked_membership(case=case, user_id=user_id)
    _check_role(user=membership.user, role=role)
    if (
        membership.role == Membership.Role.LAWYER
        and role != membership.role
        and _lawyer_count(case) == 1
    ):
        raise Conflict("A case keeps at least one lawyer.")
    membership.role = role
    membership.save(update_fields=["role"])
    account_services.audit_record(
        actor=actor, action="case.member_role", case=case, target=membership, detail={"role": role}
    )
    return membership


@transaction.atomic
def member_remove(*, actor: User, case: Case, user_id: int) -> None:
    """Remove a member; their open sockets on the case close when the transaction commits."""
    _require_manager(actor=actor, case=case)
    membership = _locked_membership(case=case, user_id=user_id)
    if membership.role == Membership.Role.LAWYER and _lawyer_count(case) == 1:
        raise Conflict("A case keeps at least one lawyer.")
    account_services.audit_record(
        actor=actor, action="case.member_remove", case=case, target=membership
    )
    membership.delete()
    events.publish_to_case(
        case_id=case.pk,
        event={"type": "cases.membership_revoked", "case_id": case.pk, "user_id": user_id},
    )


def _notice(*, case: Case, message: str, level: str = "info") -> None:
    event: events.CaseNotice = {
        "type": "cases.notice",
        "case_id": case.pk,
        "level": "success" if level == "success" else "info",
        "message": message,
        "at": timezone.now().isoformat(),
    }
    events.publish_to_case(case_id=case.pk, event=event)


# --- Live-update check: one round trip browser -> job -> worker -> channel layer -> browser ----


def case_worker_check_request(*, actor: User, case: Case) -> int:
    """Queue a job that announces itself on the case's stream. Returns the job id.

    Admins and staff use it to see that workers and live updates work end to end.
    """
    job_id = job_defer(
        "cases.worker_check",
        case_id=case.pk,
        requested_by=actor.pk,
        queued_at=timezone.now().isoformat(),
    )
    return job_id


def case_worker_check_run(*, case_id: int, requested_by: int, queued_at: str) -> None:
    """Run in a worker: publish a notice to the case. A deleted case makes this a no-op."""
    case = Case.objects.filter(pk=case_id).first()
    if case is None:
        return
    try:
        waited = (timezone.now() - datetime.fromisoformat(queued_at)).total_seconds()
    except (TypeError, ValueError):
        waited = None
    took = f" {waited:.2f} s after it was queued" if waited is not None and waited >= 0 else ""
    _notice(
        case=case,
        level="success",
        message=f"Worker on {socket.gethostname()} ran the live-update check{took}.",
    )


# --- Break-glass ------------------------------------------------------------------------------

BREAK_GLASS_REASON_MAX_CHARS = 1000


@transaction.atomic
def case_break_glass(*, actor: User, case_id: int, reason: str) -> BreakGlassGrant:
    """Let an admin who is not a member into a case for LEXWEB_BREAK_GLASS_SECONDS, for the
    reason they wrote (e.g. to add a lawyer to a case whose lawyers have all left the firm).

    Audited on the case as `case.break_glass` with the reason and the end, so its members see
    it in the case's activity and on the case page, and announced on the case's stream. Anyone
    but an active admin gets the NotFound of a missing case. Each call is a new grant.
    """
    if not actor.is_active or actor.role != User.Role.ADMIN:
        raise NotFound(f"No case {case_id}.")
    reason = " ".join(reason.split())
    if not reason:
        raise DomainError(
            "Write why you need this case: the reason is recorded and shown to its members."
        )
    if len(reason) > BREAK_GLASS_REASON_MAX_CHARS:
        raise DomainError(
            f"The reason is at most {BREAK_GLASS_REASON_MAX_CHARS} characters "
            f"(this one has {len(reason)})."
        )
    case = Case.objects.filter(pk=case_id).first()
    if case is None:
        raise NotFound(f"No case {case_id}.")
    if Membership.objects.filter(case=case, user=actor).exists():
        raise Conflict("You are a member of this case: open it as usual.")
    now = timezone.now()
    grant = BreakGlassGrant.objects.create(
        case=case,
        user=actor,
        reason=reason,
        granted_at=now,
        expires_at=now + timedelta(seconds=settings.LEXWEB_BREAK_GLASS_SECONDS),
    )
    account_services.audit_record(
        actor=actor,
        action="case.break_glass",
        case=case,
        target=grant,
        detail={"reason": reason, "expires_at": grant.expires_at.isoformat()},
    )
    until = timezone.localtime(grant.expires_at)
    _notice(
        case=case,
        message=f"{actor} (admin) opened this case by break-glass until {until:%H:%M}: {reason}",
    )
    return grant
