from datetime import datetime

from django.conf import settings
from ninja import ModelSchema
from pydantic import Field

from apps.accounts.models import ApiToken, User
from lexweb.api_schemas import StrictIn


class UserOut(ModelSchema):
    class Meta:
        model = User
        fields = ["id", "email", "full_name", "role"]


class TokenOut(ModelSchema):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"]


class TokenIn(StrictIn):
    name: str = Field(min_length=1, max_length=100)
    expires_at: datetime | None = Field(
        None,
        description=(
            "When the token stops working, with a time zone. Every token expires: leave it out "
            f"for the default, {settings.LEXWEB_TOKEN_DEFAULT_DAYS} days from now "
            "(LEXWEB_TOKEN_DEFAULT_DAYS); at most LEXWEB_TOKEN_MAX_DAYS "
            f"({settings.LEXWEB_TOKEN_MAX_DAYS}) days from now."
        ),
    )


class TokenCreatedOut(TokenOut):
    """Returned once, at creation: `secret` is not stored and cannot be shown again."""

    secret: str
