from django.urls import path

from apps.accounts import views

app_name = "accounts"

urlpatterns = [
    path("login/", views.SignInView.as_view(), name="login"),
    path("logout/", views.SignOutView.as_view(), name="logout"),
    path("reauth/", views.reauthenticate, name="reauth"),
    path("people/", views.people, name="people"),
    path("people/<int:user_id>/", views.person, name="person"),
    path("people/<int:user_id>/password/", views.person_password, name="person_password"),
    path("people/<int:user_id>/active/", views.person_active, name="person_active"),
    path(
        "people/<int:user_id>/sign-in-link/",
        views.person_sign_in_link,
        name="person_sign_in_link",
    ),
    path("sign-in/<str:secret>/", views.sign_in_link, name="sign_in_link"),
    path("password/", views.password_choose, name="password_choose"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/revoke-all/", views.token_revoke_all, name="token_revoke_all"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token_revoke"),
]
