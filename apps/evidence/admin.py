from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.accounts.models import User
from apps.cases.models import Membership
from apps.evidence.models import FlagClearance


@admin.register(FlagClearance)
class FlagClearanceAdmin(admin.ModelAdmin):
    """Lawyers' clearings of registry flags (issue 20 req 8). Read-only: a clearing is made by
    a lawyer of the case (the document page or the API) and never changed or deleted. Like
    every admin list of case material, filtered by the admin's memberships."""

    list_display = ["cleared_at", "document", "case", "cleared_by", "reason"]
    search_fields = ["reason", "document__filename"]
    fields = readonly_fields = ("document", "case", "cleared_by", "cleared_at", "reason")
    actions = None

    @admin.display(description="case")
    def case(self, obj: FlagClearance) -> str:
        return str(obj.document.case)

    def get_queryset(self, request: HttpRequest) -> QuerySet[FlagClearance]:
        user = request.user
        assert isinstance(user, User)  # noqa: S101  (the admin site only lets admins in)
        member_cases = Membership.objects.filter(user=user).values("case_id")
        return (
            super()
            .get_queryset(request)
            .select_related("document__case", "cleared_by")
            .filter(document__case_id__in=member_cases)
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
