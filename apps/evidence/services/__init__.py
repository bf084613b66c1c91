"""Writes of the evidence app, one module per part: `registry` (generated artifacts),
`checks` (registry checks of uploads), `packets` (evidence packets). Import the module:
`from apps.evidence.services import registry`."""
