from django.db.models import QuerySet
from ninja import Router, Status
from ninja.pagination import paginate

from apps.accounts import selectors, services
from apps.accounts.models import ApiToken, User
from apps.accounts.reauth import reauthenticated_at
from apps.accounts.schemas import TokenCreatedOut, TokenIn, TokenOut, UserOut
from apps.accounts.types import AuthedRequest
from lexweb.api_schemas import ErrorOut, ObjectId, keep_no_body

router = Router(tags=["accounts"])


def _via_token(request: AuthedRequest) -> ApiToken | None:
    """The token the request was made with; None for a browser session."""
    token: ApiToken | None = getattr(request, "api_token", None)
    return token


@router.get("/me", response=UserOut)
def me(request: AuthedRequest) -> User:
    return request.auth


@router.get("/tokens", response=list[TokenOut])
@paginate
def list_tokens(request: AuthedRequest) -> QuerySet[ApiToken]:
    return selectors.token_list_for_user(user=request.auth)


@router.post(
    "/tokens", response={201: TokenCreatedOut, 400: ErrorOut, 403: ErrorOut, 409: ErrorOut}
)
def create_token(request: AuthedRequest, payload: TokenIn) -> Status[TokenCreatedOut]:
    """Only from a browser session whose password was entered in the last few minutes
    (403 `reauth_required` otherwise); never with a token (403)."""
    via_token = _via_token(request)
    issued = services.token_issue(
        user=request.auth,
        name=payload.name,
        expires_at=payload.expires_at,
        via_token=via_token,
        reauthenticated_at=None if via_token else reauthenticated_at(request.session),
    )
    # The secret is shown once and never stored in the clear, not even for an Idempotency-Key.
    keep_no_body(request, "it holds the new token's secret")
    out = TokenOut.from_orm(issued.token).dict()
    return Status(201, TokenCreatedOut.model_validate({**out, "secret": issued.secret}))


@router.delete("/tokens/{token_id}", response={200: TokenOut, 403: ErrorOut, 404: ErrorOut})
def revoke_token(request: AuthedRequest, token_id: ObjectId) -> ApiToken:
    """A token may revoke itself; other tokens are revoked from a browser session."""
    return services.token_revoke(
        user=request.auth, token_id=token_id, via_token=_via_token(request)
    )
