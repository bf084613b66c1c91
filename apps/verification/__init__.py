"""Verification: claims extracted from drafts, checked against a frozen evidence packet."""
