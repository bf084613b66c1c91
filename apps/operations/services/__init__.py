"""Writes of the operations app, one module per sub-domain (import the module, not names:
`from apps.operations.services import recovery`)."""
