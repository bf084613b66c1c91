from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.accounts.admin_audit import AuditedAdmin
from apps.accounts.models import User
from apps.cases import services
from apps.cases.models import Case, Membership


class MembershipInline(admin.TabularInline):
    """Shown, not edited: membership changes go through the case page, which enforces the rules
    (a case keeps a lawyer; only lawyers hold the lawyer role) and closes revoked sockets."""

    model = Membership
    extra = 0
    fields = ["user", "role", "added_at"]
    readonly_fields = ("user", "role", "added_at")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Case)
class CaseAdmin(AuditedAdmin):
    """Cases the signed-in admin is a member of; admins do not browse other matters."""

    list_display = ["number", "title", "client", "court", "status", "created_at"]
    list_filter = ["status"]
    search_fields = ["number", "title", "client"]
    fields = ["title", "number", "court", "client", "status", "created_by", "created_at"]
    readonly_fields = ["created_by", "created_at"]
    inlines = [MembershipInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Case]:
        return super().get_queryset(request).filter(memberships__user_id=request.user.pk)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Cases are opened in the app (which makes the creator a member and audits it).
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Cases are closed, not deleted: their audit trail and evidence must survive.
        return False

    def save_model(self, request: HttpRequest, obj: Case, form: Any, change: bool) -> None:
        # The form has validated fields and constraints; the service applies and audits.
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        user = request.user
        assert isinstance(user, User)  # noqa: S101  (the admin site only lets admins in)
        services.case_update(actor=user, case=obj, changes=changes)
