"""Web-view helpers for any app's views: the signed-in user, and a case as 404 when it is not
the user's (the same answer as for a case that does not exist)."""

from django.contrib import messages
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
        # An admin whose break-glass access ended is told so (on the 404 page); nobody else
        # learns anything about the case.
        refusal = selectors.break_glass_refusal(user=request_user(request), case_id=case_id)
        if refusal:
            messages.error(request, refusal)
        raise Http404("No such case.") from None
