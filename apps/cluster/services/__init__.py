"""Writes for the cluster app, split by sub-domain (STYLE.md §1):

- site: loading a site description
- gpu: recording the GPU agent's inventory, samples and state; accepting proposed boards
- placement: memory estimates from GGUF facts, the fit check
- health: the backend health registry
- dispatch: routing by role, admission, the context guard, per-call telemetry

Callers import the sub-module they need: `from apps.cluster.services import site`.
"""
