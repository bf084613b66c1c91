"""Development and demo tools of lexweb, outside the product.

- `fakebackend`: the recorded-protocol fakes of llama-server and Ollama (tests, benchmark, demo).
- `demo`: the demo case and the demo cluster (the reference site on local fakes).
- commands: `fake_backend`, `demo_backends`, `seed_demo`, `seed_demo_site`.

No product module imports this package (tests/test_layering.py), and the product runs without
it: `lexweb/settings.py` adds it to INSTALLED_APPS only when it can be imported, and `make run`
skips the demo steps when it is absent.
"""
