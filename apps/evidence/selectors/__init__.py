"""Reads of the evidence app, one module per part: `registry` (artifact lookups by bytes and
text), `provenance` (lineage of documents), `packets`. Import the module:
`from apps.evidence.selectors import registry`."""
