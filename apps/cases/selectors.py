"""Reads of cases. Every query for client material starts from one of these `_for_user` functions,
which return only what the user's memberships allow."""

from django.db.models import Count, QuerySet

from apps.accounts.models import User
from apps.cases.models import Case, Membership
from lexweb.errors import NotFound


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
    if case is None:
        raise NotFound(f"No case {case_id}.")
    return case


def case_is_member(*, user: User, case_id: int) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    return Membership.objects.filter(case_id=case_id, user=user).exists()


def membership_get(*, user: User, case: Case) -> Membership | None:
    return Membership.objects.filter(case=case, user=user).first()


def case_can_manage_members(*, user: User, case: Case) -> bool:
    """Lawyers on the case manage its members; so do admins who are members of it."""
    membership = membership_get(user=user, case=case)
    if membership is None:
        return False
    return membership.role == Membership.Role.LAWYER or user.role == User.Role.ADMIN


def membership_list_for_user(*, user: User, case_id: int) -> QuerySet[Membership]:
    case = case_get_for_user(user=user, case_id=case_id)
    return (
        Membership.objects.filter(case=case)
        .select_related("user")
        .order_by("user__full_name", "user__email")
    )


def user_can_create_case(*, user: User) -> bool:
    return user.is_active and user.role in (User.Role.LAWYER, User.Role.ADMIN)
