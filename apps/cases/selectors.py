"""Reads of cases. Every query for client material starts from one of these `_for_user` functions,
which return only what the user's memberships allow."""

from collections.abc import Collection
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db.models import Case as SqlCase
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet, When
from django.utils import timezone

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases.models import BreakGlassGrant, Case, CaseEvent, Membership
from lexweb.errors import NotFound, PermissionDenied


def case_list_for_user(*, user: User) -> QuerySet[Case]:
    # Filter through a subquery, not `memberships__user=user`: annotating after a filter on the
    # same relation reuses its join, and `member_count` would count only the user (always 1).
    member_of = Membership.objects.filter(user=user).values("case_id")
    return (
        Case.objects.filter(pk__in=member_of)
        .annotate(member_count=Count("memberships", distinct=True))
        .order_by("-created_at", "-id")
    )


def case_get_for_user(*, user: User, case_id: int) -> Case:
    """Return the case if `user` is a member. Non-members get the same NotFound as a bad id."""
    case = Case.objects.filter(pk=case_id, memberships__user=user).first()
    if case is None and break_glass_is_live(user=user, case_id=case_id):
        case = Case.objects.filter(pk=case_id).first()
    if case is None:
        raise NotFound(break_glass_refusal(user=user, case_id=case_id) or f"No case {case_id}.")
    return case


def case_is_member(*, user: User, case_id: int) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    if Membership.objects.filter(case_id=case_id, user=user).exists():
        return True
    return break_glass_is_live(user=user, case_id=case_id)


def membership_get(*, user: User, case: Case) -> Membership | None:
    return Membership.objects.filter(case=case, user=user).first()


def case_is_lawyer(*, user: User, case: Case) -> bool:
    """A lawyer by role, on the case as a lawyer: never staff (nor a staff member's token,
    which acts as its user), never an admin let in by break-glass. Who may clear a registry
    flag or include a held-back document in a production."""
    if not user.is_active or user.role != User.Role.LAWYER:
        return False
    membership = membership_get(user=user, case=case)
    return membership is not None and membership.role == Membership.Role.LAWYER


def case_can_manage_members(*, user: User, case: Case) -> bool:
    """Only a lawyer member of the case adds, removes and changes the role of its members: not
    an admin (admins never hold the lawyer role), nor a break-glass grant (read access only).
    See `case_can_rescue` for the one exception."""
    if not user.is_active:
        return False
    membership = membership_get(user=user, case=case)
    return membership is not None and membership.role == Membership.Role.LAWYER


def case_has_active_lawyer(*, case: Case) -> bool:
    return Membership.objects.filter(
        case=case, role=Membership.Role.LAWYER, user__is_active=True
    ).exists()


def case_can_rescue(*, user: User, case: Case) -> bool:
    """Whether `user` may add a lawyer to a case that has no active lawyer member (its lawyers
    have all left, or an admin opened it): an active admin who is a member of it or holds a live
    break-glass grant. Adding a lawyer is all the rescue allows; see services.member_add."""
    if not user.is_active or user.role != User.Role.ADMIN:
        return False
    reaches = membership_get(user=user, case=case) is not None or break_glass_is_live(
        user=user, case_id=case.pk
    )
    return reaches and not case_has_active_lawyer(case=case)


def case_reached_by_break_glass_only(*, user: User, case: Case) -> bool:
    """True when `user` sees the case only through a break-glass grant (not as a member): such
    access reads, it does not write."""
    return membership_get(user=user, case=case) is None and break_glass_is_live(
        user=user, case_id=case.pk
    )


def case_view_for_user(*, user: User, case: Case) -> None:
    """Audit that `user` was shown `case` itself (its page, its API answer) as `case.view`.
    `case` comes from case_get_for_user (or the web's case_or_404, which calls it)."""
    read_audit.read_record(user=user, action="case.view", case=case)


def membership_list_for_user(*, user: User, case_id: int) -> QuerySet[Membership]:
    """Who works on the case, with their roles: audited as a read (`member.list`; on the case
    page, the page's `case.view` row covers it)."""
    case = case_get_for_user(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="member.list", case=case)
    return (
        Membership.objects.filter(case=case)
        .select_related("user")
        .order_by("user__full_name", "user__email")
    )


MEMBER_CANDIDATES_MAX = 20


def member_candidates_for_user(
    *, user: User, case: Case, query: str, limit: int = MEMBER_CANDIDATES_MAX
) -> list[User]:
    """People `user` may add to `case` whose name or e-mail contains `query` (at least two
    characters): active accounts that are not members yet; in a rescue (an admin adding a
    lawyer to a case with no active lawyer) only lawyers, never the admin. Only those who
    manage the case's members (or rescue it) may look: anyone else gets PermissionDenied.
    Up to `limit` people, exact e-mail first, then by name."""
    manages = case_can_manage_members(user=user, case=case)
    if not manages and not case_can_rescue(user=user, case=case):
        raise PermissionDenied("Only lawyers on this case manage its members.")
    query = query.replace("\x00", "").strip()[:254]
    if len(query) < 2:
        return []
    people = User.objects.filter(is_active=True).exclude(
        pk__in=Membership.objects.filter(case=case).values("user_id")
    )
    if not manages:
        people = people.filter(role=User.Role.LAWYER).exclude(pk=user.pk)
    people = people.filter(Q(full_name__icontains=query) | Q(email__icontains=query))
    exact = Q(email__iexact=query)
    return list(
        people.annotate(exact=SqlCase(When(exact, then=0), default=1)).order_by(
            "exact", "full_name", "email"
        )[:limit]
    )


def member_pick_for_user(*, user: User, case: Case, text: str) -> tuple[str | None, list[User]]:
    """What the add-member form's "who" names: an e-mail address typed in full is passed on as
    it is (the service says if nobody has it); anything else is a search. Returns (e-mail,
    []) for an address, (None, the people found) for a search: one person found is the one
    meant; several are shown to choose from."""
    text = text.strip()
    try:
        validate_email(text)
    except ValidationError:
        return None, member_candidates_for_user(user=user, case=case, query=text)
    return text, []


def user_can_create_case(*, user: User) -> bool:
    return user.is_active and user.role in (User.Role.LAWYER, User.Role.ADMIN)


# --- Break-glass: an admin's recorded, time-limited way into a case they are not on ----------


def break_glass_is_live(*, user: User, case_id: int) -> bool:
    """True while an active admin holds an unexpired grant for the case."""
    if not user.is_authenticated or not user.is_active or user.role != User.Role.ADMIN:
        return False
    return BreakGlassGrant.objects.filter(
        case_id=case_id, user=user, expires_at__gt=timezone.now()
    ).exists()


def break_glass_refusal(*, user: User, case_id: int) -> str | None:
    """What to tell an admin whose grant for the case has ended; None for anyone else (they
    learn nothing about the case, not even that it exists)."""
    if not user.is_authenticated or user.role != User.Role.ADMIN:
        return None
    last = BreakGlassGrant.objects.filter(case_id=case_id, user=user).order_by("-expires_at")
    grant = last.first()
    if grant is None:
        return None
    ended = timezone.localtime(grant.expires_at)
    return (
        f"Your break-glass access to case {case_id} ended at {ended:%Y-%m-%d %H:%M %Z}; "
        "break the glass again, with a written reason, to reach it."
    )


def break_glass_list_for_case(*, case: Case) -> QuerySet[BreakGlassGrant]:
    """The case's grants, newest first. Call with a case from `case_get_for_user`."""
    return BreakGlassGrant.objects.filter(case=case).select_related("user")


def break_glass_list_live_for_user(*, user: User) -> QuerySet[BreakGlassGrant]:
    return BreakGlassGrant.objects.filter(user=user, expires_at__gt=timezone.now()).select_related(
        "case"
    )


def case_list_orphaned_for_admin(*, user: User) -> QuerySet[Case]:
    """Cases with no active lawyer (all have left the firm), for admins only: number and court,
    so that an admin can break the glass and add a new lawyer. Nothing for anyone else."""
    if not user.is_active or user.role != User.Role.ADMIN:
        return Case.objects.none()
    active_lawyer = Membership.objects.filter(
        case=OuterRef("pk"), role=Membership.Role.LAWYER, user__is_active=True
    )
    return (
        Case.objects.filter(~Exists(active_lawyer))
        .only("id", "number", "court", "created_at")
        .order_by("-created_at", "-id")
    )


def break_glass_live_pairs(
    *, user_ids: Collection[int], case_ids: Collection[int]
) -> set[tuple[int, int]]:
    """(user id, case id) of the live grants among these, held by active admins: the websocket
    watch (apps/accounts/access.py) counts them as memberships until they expire."""
    rows = BreakGlassGrant.objects.filter(
        user_id__in=user_ids,
        case_id__in=case_ids,
        expires_at__gt=timezone.now(),
        user__is_active=True,
        user__role=User.Role.ADMIN,
    ).values_list("user_id", "case_id")
    return set(rows)


class CaseAccessForAccounts:
    """Who belongs to which case, for the accounts app beneath (apps/accounts/case_access.py):
    registered when Django starts (apps.cases.apps.CasesConfig.ready)."""

    def member_pairs(
        self, *, user_ids: Collection[int], case_ids: Collection[int]
    ) -> set[tuple[int, int]]:
        members = set(
            Membership.objects.filter(user_id__in=user_ids, case_id__in=case_ids).values_list(
                "user_id", "case_id"
            )
        )
        return members | break_glass_live_pairs(user_ids=user_ids, case_ids=case_ids)

    def grant_pairs(
        self, *, user_ids: Collection[int], case_ids: Collection[int]
    ) -> set[tuple[int, int]]:
        rows = BreakGlassGrant.objects.filter(user_id__in=user_ids, case_id__in=case_ids)
        return set(rows.values_list("user_id", "case_id"))

    def member_case_ids(self, *, user_id: int) -> QuerySet[Any, Any]:
        return Membership.objects.filter(user_id=user_id).values("case_id")


# --- The case's feed (apps/cases/events.py, apps/cases/feed.py) ---------------------------------

MAX_EVENTS_PAGE = 1000


def case_events_for_user(
    *, user: User, case_id: int, after: int = 0, limit: int = MAX_EVENTS_PAGE
) -> list[CaseEvent]:
    """The case's events numbered above `after`, in order, at most `limit`. Audited as one read
    of the case's events (they carry file names and states)."""
    case = case_get_for_user(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="case.events", case=case)
    return case_events_after(case_id=case.pk, after=after, limit=limit)


def case_events_after(*, case_id: int, after: int, limit: int = MAX_EVENTS_PAGE) -> list[CaseEvent]:
    """Numbered events of a case whose access the caller has checked."""
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        after = 0
    limit = max(1, min(limit, MAX_EVENTS_PAGE))
    return list(CaseEvent.objects.filter(case_id=case_id, seq__gt=after).order_by("seq")[:limit])


def case_events_count(*, case_id: int, after: int) -> int:
    """How many of a case's events are numbered above `after` (access checked by the caller)."""
    return CaseEvent.objects.filter(case_id=case_id, seq__gt=max(after, 0)).count()


def case_events_newest(*, case_id: int) -> int:
    """The highest number of a case's feed (0 before its first event); access checked by the
    caller."""
    newest = CaseEvent.objects.filter(case_id=case_id).aggregate(top=Max("seq"))["top"]
    return int(newest or 0)


def case_events_resume_for_user(
    *, user: User, case_id: int, after: int | None
) -> tuple[list[CaseEvent], int, bool]:
    """Where a case's websocket opened with `?after=` starts (apps/cases/consumers.py): the
    stored events numbered above `after` (an audited read), the number it then stands at, and
    whether they are all that was missed. `after` None ("latest"): none, from the newest
    number. More missed than one page, or a number the feed never reached (a restored
    database): none are sent, it stands at the newest number, and the answer is False (the page
    reads its state again instead)."""
    newest = case_events_newest(case_id=case_id)
    if after is None or after == newest:  # nothing missed: nothing read
        return [], newest if after is None else after, True
    if after > newest or newest - after > MAX_EVENTS_PAGE:
        return [], newest, False
    events = case_events_for_user(user=user, case_id=case_id, after=after)
    return events, (events[-1].seq or after) if events else after, True


def case_stream_open_for_user(*, user: User, case_id: int) -> Case:
    """The case whose events a stream is about to follow (NotFound for non-members). Audited
    as one read of the case's events when the stream opens."""
    case = case_get_for_user(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="case.stream", case=case)
    return case
