"""Every list of the API: `{items, count, next}` (issue 22, the contract). `limit` (at most
NINJA_PAGINATION_MAX_LIMIT, default NINJA_PAGINATION_PER_PAGE) and `offset` as before; `next` is
the path and query of the following page (the same filters, the offset moved on by the limit),
or null on the last page, so an agent pages by following it until null. Set as Ninja's default
(NINJA_PAGINATION_CLASS), so every `@paginate` list has it."""

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

# No list comes near it; PostgreSQL's OFFSET is a bigint, and a larger number was a 500.
MAX_OFFSET = 1_000_000_000


class Pages(LimitOffsetPagination):
    class Input(LimitOffsetPagination.Input):
        offset: int = Field(0, ge=0, le=MAX_OFFSET)

    class Output(Schema):
        items: list[Any]
        count: int
        next: str | None = Field(
            None,
            description="The path and query of the next page (same filters), null on the last.",
        )

    def paginate_queryset(
        self,
        queryset: QuerySet[Any],
        pagination: LimitOffsetPagination.Input,
        request: HttpRequest,
        **params: Any,
    ) -> Any:
        page = super().paginate_queryset(queryset, pagination, request, **params)
        page["next"] = self._next(request, pagination, int(page["count"]))
        return page

    async def apaginate_queryset(
        self,
        queryset: QuerySet[Any],
        pagination: LimitOffsetPagination.Input,
        request: HttpRequest,
        **params: Any,
    ) -> Any:
        page = await super().apaginate_queryset(queryset, pagination, request, **params)
        page["next"] = self._next(request, pagination, int(page["count"]))
        return page

    def _next(
        self, request: HttpRequest, pagination: LimitOffsetPagination.Input, count: int
    ) -> str | None:
        limit = min(pagination.limit, self.max_limit)
        following = pagination.offset + limit
        if following >= count:
            return None
        query = request.GET.copy()
        query["offset"] = str(following)
        query["limit"] = str(limit)
        return f"{request.path}?{query.urlencode()}"
