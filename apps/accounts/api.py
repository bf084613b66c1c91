from django.db.models import QuerySet
from ninja import Router, Status
from ninja.pagination import paginate

from apps.accounts import selectors, services
from apps.accounts.models import ApiToken, User
from apps.accounts.schemas import TokenCreatedOut, TokenIn, TokenOut, UserOut
from apps.api.schemas import ErrorOut, ObjectId
from apps.api.types import AuthedRequest

router = Router(tags=["accounts"])


@router.get("/me", response=UserOut)
def me(request: AuthedRequest) -> User:
    return request.auth


@router.get("/tokens", response=list[TokenOut])
@paginate
def list_tokens(request: AuthedRequest) -> QuerySet[ApiToken]:
    return selectors.token_list_for_user(user=request.auth)


@router.post("/tokens", response={201: TokenCreatedOut, 400: ErrorOut, 409: ErrorOut})
def create_token(request: AuthedRequest, payload: TokenIn) -> Status[TokenCreatedOut]:
    issued = services.token_create(
        user=request.auth, name=payload.name, expires_at=payload.expires_at
    )
    out = TokenOut.from_orm(issued.token).dict()
    return Status(201, TokenCreatedOut.model_validate({**out, "secret": issued.secret}))


@router.delete("/tokens/{token_id}", response={200: TokenOut, 404: ErrorOut})
def revoke_token(request: AuthedRequest, token_id: ObjectId) -> ApiToken:
    return services.token_revoke(user=request.auth, token_id=token_id)
