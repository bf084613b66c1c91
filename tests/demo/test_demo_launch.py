"""`make run` itself (the launcher, its embedded PostgreSQL, its workers) seeds the demo case's
documents, reads them on its cpu worker and freezes their packet, without holding up the start.

Read from the start of the session's product (tests/harness/product.py), which is launched as
`make run` is, demo on: a launch of its own would repeat the same start."""

import pytest

from tests.harness.product import Product

pytestmark = pytest.mark.product  # reads the session's launched product (make run)

READY = "The demo case DEMO-2026-001 is ready"


def test_make_run_seeds_the_demo_documents_and_freezes_their_packet(product: Product) -> None:
    # The documents are uploaded before the children start; the cpu worker reads them and
    # freezes the packet while the web server starts (either may say so first).
    started = product.wait_for_output("running at", "Demo case: 5 documents uploaded")
    seeded = product.wait_for_output(READY, timeout=180)
    assert started.index("Demo case: 5 documents uploaded") < started.index("running at")
    ready = next(line for line in seeded.splitlines() if READY in line)
    assert "Bates numbers from ACME000001 (production ACME001)" in ready
    assert "packet “Delivery dispute: the record” frozen (6 pages)" in ready
    # Nothing went wrong on the way: the start, up to the first of the two (other tests' work
    # on this product may follow it), and the seeding.
    launch = seeded[: min(seeded.index("running at"), seeded.index(READY))]
    assert "Traceback" not in launch
    before = seeded[: seeded.index(READY)]
    assert "The demo seeding stops" not in before and "seed_demo:" not in before
