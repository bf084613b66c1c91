from django.http import HttpRequest

from apps.accounts.models import User


class AuthedRequest(HttpRequest):
    """An API request after authentication: `auth` is the user the token or session belongs to."""

    auth: User
