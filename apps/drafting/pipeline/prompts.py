"""Prompt templates: files in apps/drafting/prompts/<stage>.txt, each with its version.

A template file is:

    version: 3
    --- system
    text with $placeholders
    --- user
    text with $placeholders

Placeholders are `string.Template` names ($kind, $instructions, $evidence, ...); a placeholder
the stage does not fill is an error, never left in the prompt. The template's name and version
are stored on the stage (chain of custody) with the prompt itself.
"""

import functools
import string
from dataclasses import dataclass
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    version: str
    system: str
    user: str

    def render(self, **values: str) -> tuple[str, str]:
        """(system, user) with every placeholder filled; KeyError names a missing one."""
        return (
            string.Template(self.system).substitute(values),
            string.Template(self.user).substitute(values),
        )


@functools.cache
def template_load(name: str) -> PromptTemplate:
    """The template `name` (a stage name), read once per process."""
    text = (PROMPTS_DIR / f"{name}.txt").read_text(encoding="utf-8")
    head, _, rest = text.partition("\n")
    if not head.startswith("version:"):
        raise ValueError(f"Prompt template {name} does not start with its version line.")
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in rest.splitlines():
        if line.startswith("--- "):
            current = sections.setdefault(line[4:].strip(), [])
        elif current is not None:
            current.append(line)
    return PromptTemplate(
        name=name,
        version=head.partition(":")[2].strip(),
        system="\n".join(sections.get("system", [])).strip(),
        user="\n".join(sections.get("user", [])).strip(),
    )
