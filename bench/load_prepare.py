"""The people and agents of the load test (bench/bench_load.py), made in the launched product's
own database through the services, as an admin would: run there with
`python -m lexweb.launcher manage shell -c "from bench import load_prepare; load_prepare.main()"`
and the environment of that product. Prints one line `LOAD=<json>`: the demo case, its frozen
packet, its ready documents, the people's e-mail addresses and the agents' tokens.

Kept apart from bench_load.py because that module imports Locust, which monkey-patches the
standard library with gevent as it is imported; this one runs in an ordinary Django process.
"""

import json
import os

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import services as case_services
from apps.cases.models import Case
from apps.documents.models import Document
from apps.evidence.models import Packet
from lexweb_dev import demo


def main() -> None:
    people = int(os.environ["BENCH_LOAD_PEOPLE"])
    agents = int(os.environ["BENCH_LOAD_AGENTS"])
    password = os.environ["BENCH_LOAD_PASSWORD"]
    case = Case.objects.get(number=demo.DEMO_NUMBER)
    lawyer = User.objects.get(email=demo.DEMO_LAWYER)
    packet = Packet.objects.filter(case=case, status=Packet.Status.FROZEN).order_by("pk").first()
    if packet is None:
        raise SystemExit("the demo's packet is not frozen yet")

    def member(email: str, name: str) -> User:
        user = User.objects.filter(email=email).first() or account_services.user_create(
            email=email, full_name=name, role=User.Role.LAWYER, password=password, actor=None
        )
        if not case.memberships.filter(user=user).exists():
            case_services.member_add(actor=lawyer, case=case, email=email, role="lawyer")
        return user

    emails = []
    for n in range(people):
        emails.append(member(f"person{n}@load.bench", f"Load person {n}").email)
    tokens = []
    for n in range(agents):
        user = member(f"agent{n}@load.bench", f"Load agent {n}")
        tokens.append(account_services.token_create(user=user, name=f"load agent {n}").secret)
    documents = list(
        Document.objects.filter(case=case, status=Document.Status.READY)
        .order_by("pk")
        .values_list("pk", "page_count")
    )
    print(
        "LOAD="
        + json.dumps(
            {
                "case_id": case.pk,
                "packet_id": packet.pk,
                "documents": documents,
                "people": emails,
                "tokens": tokens,
            }
        )
    )
