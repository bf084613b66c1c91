"""Web-view helpers for any app's views: the signed-in user, and a case as 404 when it is not
the user's (the same answer as for a case that does not exist)."""

from django.http import Http404, HttpRequest

from apps.accounts.models import User
from apps.cases import selectors
from apps.cases.models import Case
from lexweb.errors import NotFound


def request_user(request: HttpRequest) -> User:
    """The signed-in user. Call only behind @login_required."""
    user = request.user
    assert isinstance(user, User)  # noqa: S101  (login_required ran first)
    return user


def case_or_404(request: HttpRequest, case_id: int) -> Case:
    try:
        return selectors.case_get_for_user(user=request_user(request), case_id=case_id)
    except NotFound:
        raise Http404("No such case.") from None
