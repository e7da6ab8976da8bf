"""The result types of the faithfulness assessment: a verdict and typed findings.

Not here: how findings are found (``assess``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Kind = Literal["lost", "added_subject", "contradiction", "form"]
KINDS: tuple[Kind, ...] = ("lost", "added_subject", "contradiction", "form")


class Finding(BaseModel):
    """One reason an output is not a faithful enhancement of its prompt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind
    code: str  # e.g. "lost_subject", "added_animal", "color", "second_person"
    detail: str  # one sentence for a person
    words: list[str] = []  # the words of the prompt or output it is about

    def __str__(self) -> str:
        return self.detail


class Assessment(BaseModel):
    """``verdict`` is "pass" when there is no finding; ``kept`` lists the prompt's subjects
    found in the output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Literal["pass", "fail"]
    findings: list[Finding] = []
    kept: list[str] = []

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def kinds(self) -> set[str]:
        return {f.kind for f in self.findings}

    def reasons(self) -> list[str]:
        return [f.detail for f in self.findings]
