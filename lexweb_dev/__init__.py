"""Development and demo tools of lexweb, outside the product.

- `fakebackend`: the recorded-protocol fakes of llama-server and Ollama (tests, benchmark, demo).
- `fakebackend.writer`: the demo's models (FakeSettings.demo_writer), which write from the
  excerpts of their prompt and plant the mistakes the verifier blocks.
- `demo`: the demo case and the demo cluster (the reference site on local fakes, writing).
- `demo_evidence`: the demo case's documents, Bates production and frozen packet, and the job
  that finishes them (`tasks`: "lexweb_dev.demo_seed_continue").
- commands: `fake_backend`, `demo_backends`, `seed_demo`, `seed_demo_site`.

No product module imports this package (tests/test_layering.py), and the product runs without
it: `lexweb/settings.py` adds it to INSTALLED_APPS only when it can be imported, and `make run`
skips the demo steps when it is absent.
"""
