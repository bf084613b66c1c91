from django.conf import settings as real_settings
from django.contrib.auth.hashers import identify_hasher, make_password
from django.test import override_settings

from lexweb import settings as project_settings


def test_passwords_are_stored_with_argon2() -> None:
    # The suite swaps in a fast hasher (conftest); the product's own list starts with Argon2.
    assert project_settings.PASSWORD_HASHERS[0].endswith("Argon2PasswordHasher")
    with override_settings(PASSWORD_HASHERS=project_settings.PASSWORD_HASHERS):
        encoded = make_password("Correct-horse-battery-42")
        assert identify_hasher(encoded).algorithm == "argon2"
    assert real_settings.AUTH_PASSWORD_VALIDATORS
