"""Per-call decoding statistics shared by the plain and speculative decoders."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class DecodeStats:
    prompt_tokens: int = 0
    new_tokens: int = 0
    target_forwards: int = 0  # decoding passes of the target after prefill
    prefill_s: float = 0.0
    decode_s: float = 0.0  # everything after prefill
    draft_s: float = 0.0
    verify_s: float = 0.0
    accepted_lengths: list[int] = field(default_factory=list)  # draft tokens accepted per round
    depth_attempts: list[int] = field(default_factory=list)  # rounds whose tree reached depth d+1
    depth_accepts: list[int] = field(default_factory=list)  # rounds that accepted depth d+1
    finish_reason: str | None = None
    rounds: list[dict] = field(default_factory=list)  # the harness's choices per round

    @property
    def tau(self) -> float:
        """Tokens produced per target forward pass (1.0 for plain decoding)."""
        return self.new_tokens / self.target_forwards if self.target_forwards else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.decode_s if self.decode_s > 0 else 0.0

    def record_round(self, accepted: int, tree_depth: int) -> None:
        self.accepted_lengths.append(accepted)
        for store, count in ((self.depth_attempts, tree_depth), (self.depth_accepts, accepted)):
            store.extend([0] * (count - len(store)))
            for d in range(count):
                store[d] += 1

    def depth_acceptance(self) -> list[float]:
        """Per depth d: fraction of rounds reaching depth d whose token at d was accepted."""
        return [
            a / n if n else 0.0
            for a, n in zip(
                self.depth_accepts + [0] * len(self.depth_attempts), self.depth_attempts
            )
        ]

    def as_dict(self) -> dict:
        out = asdict(self)
        out.update(
            tau=self.tau, tokens_per_s=self.tokens_per_s, depth_acceptance=self.depth_acceptance()
        )
        return out
