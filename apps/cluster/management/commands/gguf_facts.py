import dataclasses
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.cluster import gguf


class Command(BaseCommand):
    help = (
        "Print the GGUF facts of a model file (any part of a split model), read from its header "
        "only, as deployment fields to paste into the admin or a site file."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the .gguf file")
        parser.add_argument(
            "--json", action="store_true", help="print every fact as one JSON object"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            facts = gguf.read_gguf_facts(options["path"])
        except gguf.GgufError as exc:
            raise CommandError(exc.message) from None
        if options["json"]:
            payload = {**dataclasses.asdict(facts), "deployment": facts.deployment_values()}
            self.stdout.write(json.dumps(payload, indent=2))
            return
        self.stdout.write(
            f"# {facts.name or facts.architecture}: {facts.tensor_count:,} tensors in "
            f"{facts.files} file{'s' if facts.files != 1 else ''}"
        )
        for name, value in facts.deployment_values().items():
            # Underscored numbers read back as integers in a site file (YAML) and stay legible.
            shown = f"{value:_}" if isinstance(value, int) and value >= 10_000 else value
            self.stdout.write(f"{name}: {shown}")
        self.stdout.write(
            f"# {facts.block_count} layers, {facts.kv_layers} of them with a KV cache; "
            f"{facts.expert_count} experts, {facts.expert_used_count} used per token; "
            f"trained context {facts.context_length:,}"
        )
