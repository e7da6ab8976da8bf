"""When generation ends: EOS tokens, stop strings, the token budget, a caller's predicate.

Both decoders feed accepted tokens through ``StopChecker.accept`` one at a
time, so a stop inside a speculative run ends the output at exactly the
token where plain decoding would have ended it. The EOS token itself is not
part of the output; the token that completes a stop string is (its text is
cut by ``trim_text``).
"""

from __future__ import annotations

from typing import Callable, Sequence


class StopChecker:
    def __init__(
        self,
        eos_ids: Sequence[int],
        max_new_tokens: int,
        stop_strings: Sequence[str] = (),
        decode: Callable[[list[int]], str] | None = None,
        stop_if: Callable[[list[int]], bool] | None = None,
    ) -> None:
        """``stop_if(tokens)`` is asked after every kept token; True ends generation there
        (finish reason "budget"), e.g. once the text holds more words than a caller keeps."""
        if stop_strings and decode is None:
            raise ValueError("stop strings need a decode function")
        self.eos_ids = frozenset(eos_ids)
        self.max_new_tokens = max_new_tokens
        self.stop_strings = tuple(s for s in stop_strings if s)
        self.decode = decode
        self.stop_if = stop_if
        self.tokens: list[int] = []
        self.finish_reason: str | None = None if max_new_tokens > 0 else "length"
        self._tail_chars = max((len(s) for s in self.stop_strings), default=0) + 16

    @property
    def done(self) -> bool:
        return self.finish_reason is not None

    def accept(self, token: int) -> bool:
        """Record one generated token; return True when generation must stop here."""
        if self.done:
            raise RuntimeError("generation already finished")
        if token in self.eos_ids:
            self.finish_reason = "eos"
            return True
        self.tokens.append(token)
        if self.stop_strings and self._hit_stop_string():
            self.finish_reason = "stop"
        elif len(self.tokens) >= self.max_new_tokens:
            self.finish_reason = "length"
        elif self.stop_if is not None and self.stop_if(self.tokens):
            self.finish_reason = "budget"
        return self.done

    def accept_many(self, tokens: Sequence[int]) -> int:
        """Feed tokens until one stops generation; return how many were consumed."""
        for used, token in enumerate(tokens, start=1):
            if self.accept(token):
                return used
        return len(tokens)

    def _hit_stop_string(self) -> bool:
        # decode only a bounded tail: enough tokens to hold the longest stop string
        tail = self.decode(self.tokens[-self._tail_chars :])
        return any(s in tail for s in self.stop_strings)

    def trim_text(self, text: str) -> str:
        """Cut decoded output before the first stop string."""
        cuts = [text.find(s) for s in self.stop_strings if s in text]
        return text[: min(cuts)] if cuts else text
