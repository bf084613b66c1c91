from django.contrib import admin
from django.urls import include, path

from apps.api.api import api
from lexweb import failures, health

handler500 = failures.server_error

admin.site.site_header = "lexweb administration"
admin.site.site_title = "lexweb admin"

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("accounts/", include("apps.accounts.urls")),
    path("", include("apps.cases.urls")),
    path("", include("apps.documents.urls")),
    path("", include("apps.evidence.urls")),
    path("", include("apps.drafting.urls")),
    path("", include("apps.cluster.urls")),
]
