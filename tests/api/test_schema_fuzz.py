"""Issue 22 requirement 7: property-based tests of the whole API from its own OpenAPI schema
(schemathesis). For every operation and every identity (a lawyer and a staff member of the
case, a lawyer of another case, an admin of no case, nobody), generated requests, valid and
not, never get a 5xx, and every response matches the schema: its status is one the operation
declares and its body that status's schema.

The case's id is put in the path half of the time (a generated id almost never names a case),
so that the member identities reach past the case check. Two things are left to the tests
that are about them: the Server-Sent Event streams (`/events/stream`, which answer for as long
as the client reads: tests/cases/test_case_feed.py, tests/drafting/test_run_event_stream.py)
and the long poll's wait (`wait` held at 0 here; the same two files test waiting).
"""

import copy
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import hypothesis
import pymupdf
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, connection
from django.test import override_settings
from hypothesis import HealthCheck
from hypothesis import strategies as st
from schemathesis import checks
from schemathesis.specs.openapi import checks as openapi_checks

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.api.api import api
from apps.cases.models import Case, Membership
from apps.documents import services as document_services
from apps.evidence.services import packets as packet_services
from tests.conftest import make_case, make_lawyer, make_staff
from tests.factories import CaseFactory, MembershipFactory, UserFactory
from tests.harness.database import flush_written_tables

# (fuzzing every operation as every identity: the slow tier, `make test` runs it)
pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# Generated requests per operation and identity (68 operations, 5 identities).
EXAMPLES = 4


def _schema_under_test() -> dict[str, Any]:
    raw = copy.deepcopy(api.get_openapi_schema(path_prefix="/api/v1/"))
    for path in [path for path in raw["paths"] if path.endswith("/events/stream")]:
        del raw["paths"][path]
    for methods in raw["paths"].values():
        for operation in methods.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and parameter.get("name") == "wait":
                    parameter["schema"] = {**parameter["schema"], "maximum": 0}
    return raw


# What requirement 7 asks: no 5xx, and the status, media type and body each as the schema says.
CHECKS = [
    checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
]

schema = schemathesis.openapi.from_dict(_schema_under_test())
schema.app = get_wsgi_application()


@dataclass
class World:
    case_id: int = 0


WORLD = World()


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any] | None) -> Any:
    if not path_parameters or "case_id" not in path_parameters or not WORLD.case_id:
        return st.just(path_parameters)
    return st.sampled_from([path_parameters, {**path_parameters, "case_id": WORLD.case_id}])


@pytest.fixture(autouse=True)
def _connection_kept_between_requests() -> Iterator[None]:
    """As Django's test client does: the WSGI handler's end of request would close the database
    connection that holds the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(scope="module")
def _world(django_db_setup: None, django_db_blocker: Any) -> Iterator[dict[str, dict[str, str]]]:
    """Bearer headers by identity, and a case with a read document in a packet, so that the
    case's own routes have something to answer with; made once for the file, committed, and
    deleted at its end (each test runs in a transaction rolled back after it)."""
    md5 = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    with django_db_blocker.unblock(), override_settings(PASSWORD_HASHERS=md5):
        lawyer = make_lawyer()
        case = make_case(lawyer, staff := make_staff())
        outsider = UserFactory(email="outsider@firm.test", role=User.Role.LAWYER)
        other = CaseFactory(created_by=outsider, number="CV-2026-0999")
        MembershipFactory(case=other, user=outsider, role=Membership.Role.LAWYER)
        admin = UserFactory(
            email="admin@firm.test", role=User.Role.ADMIN, is_staff=True, is_superuser=True
        )
        _case_material(lawyer, case)
        WORLD.case_id = case.pk
        yield {
            "lawyer": _bearer(lawyer),
            "staff": _bearer(staff),
            "outsider": _bearer(outsider),
            "admin": _bearer(admin),
            "nobody": {},
        }
        WORLD.case_id = 0
        flush_written_tables(connection)


def _bearer(user: User) -> dict[str, str]:
    issued = account_services.token_create(user=user, name="schema fuzz")
    return {"Authorization": f"Bearer {issued.secret}"}


def _case_material(lawyer: User, case: Case) -> None:
    with pymupdf.open() as pdf:
        pdf.new_page().insert_text((72, 72), "The ledger of Acme, page one.", fontsize=11)
        data = pdf.tobytes()
    outcome = document_services.document_upload(
        case=case, uploaded_by=lawyer, filename="ledger.pdf", source=io.BytesIO(data),
        origin="client",
    )  # fmt: skip
    assert outcome.document is not None
    document_services.document_extract_text(document_id=outcome.document.pk)
    packet = packet_services.packet_create(user=lawyer, case_id=case.pk, title="Record")
    packet_services.packet_items_add(
        user=lawyer,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[packet_services.Selection(document_id=outcome.document.pk, reason="Fuzz")],
    )


@pytest.fixture
def identities(db: None, _world: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return _world


@schema.parametrize()
@hypothesis.settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_a_members_requests_get_no_5xx_and_answers_that_match_the_schema(
    case: Any, identities: dict[str, dict[str, str]]
) -> None:
    """The lawyer of the case, whose requests reach furthest: schemathesis's coverage phase
    (each parameter and body field at its bounds and past them, missing, of the wrong type, and
    the methods an operation does not have), then generated requests."""
    response = case.call(headers=identities["lawyer"])

    case.validate_response(response, checks=CHECKS)


@pytest.mark.parametrize("identity", ["staff", "outsider", "admin", "nobody"])
@schema.parametrize()
@hypothesis.settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
    # Generated requests only: the coverage phase's hundreds of boundary cases an operation
    # (above) mostly end at the case or role check for these identities.
    phases=[hypothesis.Phase.generate],
)
def test_every_other_identitys_requests_get_no_5xx_and_answers_that_match_the_schema(
    case: Any, identity: str, identities: dict[str, dict[str, str]]
) -> None:
    response = case.call(headers=identities[identity])

    case.validate_response(response, checks=CHECKS)
