"""Result-path templates of the workflow-only stages (retrain, lenet): :func:`ctbench.facts.path` and ``pattern`` for
a stage's own templates. Kept out of :mod:`ctbench.facts` on purpose: every command reaches facts, so a template there
moves every stage's code fingerprint; only the workflow planner imports this module."""

from __future__ import annotations

import string
from typing import Any


class StagePaths:
    """``fields`` / ``path`` / ``pattern`` over one stage's ``{kind: template}`` mapping."""

    def __init__(self, stage: str, templates: dict[str, str]):
        self.stage, self.templates = stage, templates

    def _template(self, kind: str) -> str:
        if kind not in self.templates:
            raise ValueError(f"no {self.stage} result path {kind!r}; known: {sorted(self.templates)}")
        return self.templates[kind]

    def fields(self, kind: str) -> set[str]:
        """The named fields of template ``kind``."""
        return {f for _, f, _, _ in string.Formatter().parse(self._template(kind)) if f}

    def path(self, kind: str, results: str, **values: Any) -> str:
        """Template ``kind`` with every field filled (as :func:`ctbench.facts.path`)."""
        wanted = self.fields(kind) - {"results"}
        if set(values) != wanted:
            raise ValueError(f"path {kind!r} ({self.templates[kind]}) takes the fields {sorted(wanted)}, got "
                             f"{sorted(values)}")
        return self._template(kind).format(results=str(results).rstrip("/"), **values)

    def pattern(self, kind: str, results: str, **values: Any) -> str:
        """Template ``kind`` with the given fields filled and the others left as Snakemake wildcards."""
        unknown = set(values) - self.fields(kind)
        if unknown:
            raise ValueError(f"path {kind!r} ({self.templates[kind]}) has no field(s) {sorted(unknown)}")
        keep = {f: "{" + f + "}" for f in self.fields(kind)}
        return self._template(kind).format_map({**keep, "results": str(results).rstrip("/"), **values})
