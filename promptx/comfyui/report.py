"""The report output of "promptx Enhance Prompt": what was added, and why a prompt came back as it
was."""

from __future__ import annotations

from promptx.result import EnhancedPrompt


def report(result: EnhancedPrompt, seed: int, *, image_unused: bool = False) -> str:
    """Several lines: target, strength and seed; each part added; the outcome, reason and
    assessment."""
    lines = [f"target: {result.target} ({result.task}), strength: {result.strength}, seed: {seed}"]
    if result.added:
        lines.append("added:")
        lines += [f"  {part}: {text}" for part, text in result.added.items()]
    elif result.strength == "full" and not (result.fallback or result.skipped):
        lines.append("added: free prose by the model")
    outcome = (
        "fallback: the original prompt is returned"
        if result.fallback
        else "skipped: the prompt is returned unchanged"
        if result.skipped
        else "enhanced"
    )
    lines.append(f"outcome: {outcome}")
    if result.reason:
        lines.append(f"reason: {result.reason}")
    if result.assessment is not None:
        findings = "; ".join(result.assessment.reasons())
        lines.append(
            f"assessment: {result.assessment.verdict}" + (f" ({findings})" if findings else "")
        )
    if image_unused:
        lines.append(f"image: not used ({result.target} takes no input image)")
    return "\n".join(lines)
