"""The websocket watch checks every open socket of a process at once
(apps.accounts.selectors.socket_access_ended): a fixed number of queries, however many sockets,
and each socket's reason when its access ended."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts import services
from apps.accounts.models import User
from apps.accounts.selectors import SocketAccess, socket_access_ended
from apps.cases.models import Case, Membership
from tests.conftest import session_client

pytestmark = pytest.mark.django_db


def _accesses(users: list[User], case: Case, per_user: int) -> list[SocketAccess]:
    accesses = []
    for user in users:
        for n in range(per_user):
            token = services.token_create(user=user, name=f"socket {n}").token
            accesses.append(SocketAccess(user_id=user.pk, token_id=token.pk, case_id=case.pk))
        key = session_client(user).session.session_key
        accesses.append(SocketAccess(user_id=user.pk, session_key=key or "", case_id=case.pk))
        accesses.append(SocketAccess(user_id=user.pk, session_key=key or ""))  # the cluster
    return accesses


@pytest.mark.parametrize("per_user", [1, 10])
def test_live_sockets_cost_five_queries_whatever_their_number(
    lawyer: User, staff: User, case: Case, per_user: int
) -> None:
    accesses = _accesses([lawyer, staff], case, per_user)

    with CaptureQueriesContext(connection) as queries:
        ended = socket_access_ended(accesses=accesses)

    assert ended == {}
    # Accounts, tokens, sessions, memberships, break-glass grants.
    assert len(queries) == 5, [query["sql"] for query in queries]


def test_a_socket_whose_member_left_costs_one_query_more_and_says_so(
    lawyer: User, staff: User, case: Case
) -> None:
    accesses = _accesses([lawyer, staff], case, 2)
    Membership.objects.filter(case=case, user=staff).delete()

    with CaptureQueriesContext(connection) as queries:
        ended = socket_access_ended(accesses=accesses)

    left = {a for a in accesses if a.user_id == staff.pk and a.case_id is not None}
    assert ended == dict.fromkeys(left, "membership_ended")
    assert len(queries) == 6  # and whether the one who left was in by a break-glass grant
