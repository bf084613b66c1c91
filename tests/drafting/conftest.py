"""Drafting tests' shared settings."""

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper


@pytest.fixture(autouse=True)
def _stage_retries_at_once(settings: SettingsWrapper) -> None:
    """A stage whose backend failed is tried once more at once (one retry, no wait), so that the
    tests of failures do not wait out the product's 5, 15 and 30 s; the tests of the retries
    (test_stage_retries.py) set their own schedule."""
    settings.LEXWEB_STAGE_RETRY_SECONDS = [0]
