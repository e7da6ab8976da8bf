"""Online map from the drafter's confidence in a token to the probability the target accepts it.

A draft node is *tested* in a round when its parent was accepted (or it hangs
from the root); it is then accepted or not. ``AcceptanceCalibrator`` bins the
drafter's conditional probability of the node's token, counts tests and
acceptances per bin, and maps a confidence to the bin's observed rate. Each
bin starts from a prior of ``prior_weight`` pseudo-tests at the identity
(rate = confidence), so an unseen drafter is taken at its word until
observations correct it. A path's acceptance probability is the product of
the calibrated confidences along it.

Not here: the tree policy that uses these values (``engine.planning.policy``).
"""

from __future__ import annotations

from typing import Sequence

import torch

MAX_PROBABILITY = 0.999


class AcceptanceCalibrator:
    def __init__(self, bins: int = 20, prior_weight: float = 4.0) -> None:
        if bins < 1 or prior_weight <= 0:
            raise ValueError("need bins >= 1 and prior_weight > 0")
        self.bins = bins
        centers = [(i + 0.5) / bins for i in range(bins)]
        self.tests = [prior_weight] * bins  # prior + observed tests
        self.accepts = [prior_weight * c for c in centers]  # prior + observed acceptances
        self.counts = [0] * bins  # observed tests only

    def _bin(self, p: float) -> int:
        return min(max(int(p * self.bins), 0), self.bins - 1)

    def rates(self) -> torch.Tensor:
        """[bins] calibrated acceptance per confidence bin."""
        return torch.tensor([a / t for a, t in zip(self.accepts, self.tests)]).clamp(
            1e-6, MAX_PROBABILITY
        )

    def calibrate(self, confidence: torch.Tensor) -> torch.Tensor:
        """Elementwise: drafter confidence in [0, 1] -> calibrated acceptance probability."""
        index = (confidence.float() * self.bins).long().clamp(0, self.bins - 1)
        return self.rates().to(confidence.device)[index]

    def observe(self, confidences: Sequence[float], accepted: Sequence[bool]) -> None:
        """Record tested nodes: their drafter confidence and whether the target accepted them."""
        for p, ok in zip(confidences, accepted):
            b = self._bin(float(p))
            self.tests[b] += 1.0
            self.accepts[b] += 1.0 if ok else 0.0
            self.counts[b] += 1

    def snapshot(self) -> list[dict]:
        """Per bin with observations: confidence range, calibrated rate, number of tests."""
        rates = self.rates().tolist()
        return [
            {
                "confidence": [i / self.bins, (i + 1) / self.bins],
                "rate": round(rates[i], 4),
                "tests": self.counts[i],
            }
            for i in range(self.bins)
            if self.counts[i]
        ]
