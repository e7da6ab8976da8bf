"""Copy drafts: continuations looked up instead of drafted (prompt lookup and an n-gram table).

A copy draft costs no drafter step: it is a chain of tokens that followed the
current context's last tokens somewhere else, verified like any draft (so
decoding stays lossless, greedy and sampled: the chain is a deterministic
function of the committed tokens and of a table fixed before the decode).
Two places are looked in, for each next token of the chain:

- the request itself (``RequestIndex``: the prompt and the output so far), where
  the last ``LOCAL_ORDERS`` tokens occurred before: the user's words come back;
- an ``NgramTable``: for each context of 1-4 tokens seen at least ``min_count``
  times in the target's own answers, its most frequent next token and that
  token's share (the answers' fixed openers and phrases come back).

Every chain token carries a *value*: the predicted probability that the whole
chain up to it is accepted (products of the shares; a request match counts
``local_share``). The planner prices a chain by its values
(``engine.planning.policy.best_copy_length``).

Not here: verification (``engine.speculative.verify``), the decode loop
(``engine.speculative.loop``), building a table from data (``tools/build_copy_table.py``).
"""

from __future__ import annotations

import gzip
import json
from array import array
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Sequence

COPY_TABLE = "copy-table.bin.gz"  # the file name beside a drafter checkpoint
FORMAT = "promptx-copy-table"
VERSION = 1
MAX_ORDER = 4  # longest context an n-gram table keys on
LOCAL_ORDERS = (4, 3, 2)  # context lengths looked up in the request, longest first
SHARE_SCALE = 1_000_000  # shares are stored as integers in millionths


class CopyTableError(ValueError):
    """A copy table file is missing, malformed, or made for another target."""


class CopyTableMismatch(CopyTableError):
    """A copy table made for another target."""


class NgramTable:
    """Context n-gram -> (most frequent next token, its share of that context's continuations)."""

    def __init__(
        self,
        entries: dict[tuple[int, ...], tuple[int, float]],
        order: int,
        fingerprint: str | None = None,
    ) -> None:
        self.entries, self.order, self.fingerprint = entries, order, fingerprint

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def build(
        cls,
        sequences: Iterable[Sequence[int]],
        order: int = MAX_ORDER,
        min_count: int = 3,
        min_share: float = 0.2,
        fingerprint: str | None = None,
    ) -> "NgramTable":
        """Count every context of 1..``order`` tokens in ``sequences``; keep those seen
        ``min_count`` times whose best next token has at least ``min_share`` of them. The share is
        discounted by one unseen continuation (count / (total + 1)), so a context seen 3 times out
        of 3 says 0.75."""
        counts: dict[tuple[int, ...], Counter] = defaultdict(Counter)
        for sequence in sequences:
            tokens = list(sequence)
            for n in range(1, order + 1):
                for i in range(len(tokens) - n):
                    counts[tuple(tokens[i : i + n])][tokens[i + n]] += 1
        entries = {}
        for context, following in counts.items():
            token, best = following.most_common(1)[0]
            total = sum(following.values())
            if total >= min_count and best >= min_share * total:
                entries[context] = (token, best / (total + 1))
        return cls(entries, order, fingerprint)

    def next_token(self, tokens: Sequence[int]) -> tuple[int, float] | None:
        """(token, share) for the longest stored context ending ``tokens``, or None."""
        for n in range(min(self.order, len(tokens)), 0, -1):
            found = self.entries.get(tuple(tokens[-n:]))
            if found is not None:
                return found
        return None

    def save(self, path: str | Path) -> None:
        """A gzip file: one JSON header line, then the entries as little-endian int32 rows
        (order + 2 each: the context padded with -1, the token, the share in millionths)."""
        header = {
            "format": FORMAT,
            "version": VERSION,
            "order": self.order,
            "entries": len(self.entries),
            "target_fingerprint": self.fingerprint,
        }
        rows = array("i")
        for context, (token, share) in sorted(self.entries.items()):
            rows.extend(
                list(context)
                + [-1] * (self.order - len(context))
                + [token, round(share * SHARE_SCALE)]
            )
        if rows.itemsize != 4:
            raise CopyTableError("this platform's C int is not 32 bits")
        data = json.dumps(header, sort_keys=True).encode() + b"\n" + _little_endian(rows).tobytes()
        Path(path).write_bytes(gzip.compress(data, mtime=0))

    @classmethod
    def load(cls, path: str | Path, expect_fingerprint: str | None = None) -> "NgramTable":
        """Read a table written by ``save``; ``expect_fingerprint``: refuse one made for another
        target."""
        try:
            with gzip.open(Path(path), "rb") as stream:
                header = json.loads(stream.readline())
                body = stream.read()
        except (OSError, EOFError, ValueError) as exc:
            raise CopyTableError(f"cannot read copy table {path}: {exc}") from None
        if (
            not isinstance(header, dict)
            or header.get("format") != FORMAT
            or header.get("version") != VERSION
        ):
            raise CopyTableError(f"{path} is not a version-{VERSION} promptx copy table")
        fingerprint = header.get("target_fingerprint")
        if expect_fingerprint is not None and fingerprint != expect_fingerprint:
            raise CopyTableMismatch(
                f"copy table {path} was made for target {fingerprint}, not {expect_fingerprint}"
            )
        order, count = int(header["order"]), int(header["entries"])
        rows = array("i")
        rows.frombytes(body)
        rows = _little_endian(rows)
        width = order + 2
        if len(rows) != count * width:
            raise CopyTableError(
                f"copy table {path} is cut short ({len(rows)} numbers, {count * width} expected)"
            )
        entries = {}
        for start in range(0, len(rows), width):
            context = tuple(t for t in rows[start : start + order] if t >= 0)
            entries[context] = (rows[start + order], rows[start + order + 1] / SHARE_SCALE)
        return cls(entries, order, fingerprint)


class RequestIndex:
    """Where each context of ``LOCAL_ORDERS`` tokens last ended in one request's tokens (prompt,
    then output as it is committed): the token that followed it there is the local copy guess."""

    def __init__(self, tokens: Sequence[int] = ()) -> None:
        self.tokens: list[int] = []
        self._ends: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self.tokens.append(token)
            end = len(self.tokens) - 1  # the context ending before this token is now followed by it
            for n in LOCAL_ORDERS:
                if end >= n:
                    self._ends[tuple(self.tokens[end - n : end])] = end

    def next_token(self, tail: Sequence[int]) -> int | None:
        """The token that followed the longest of ``tail``'s last n tokens (n in
        ``LOCAL_ORDERS``)."""
        for n in LOCAL_ORDERS:
            if len(tail) >= n:
                end = self._ends.get(tuple(tail[-n:]))
                if end is not None:
                    return self.tokens[end]
        return None


class CopyDrafter:
    """Copy drafts for one target: ``start`` a session per decode, ``propose`` chains from it."""

    def __init__(
        self, table: NgramTable | None = None, max_length: int = 8, local_share: float = 0.5
    ) -> None:
        if max_length < 1 or not 0.0 < local_share <= 1.0:
            raise ValueError("copy drafts need max_length >= 1 and 0 < local_share <= 1")
        self.table, self.max_length, self.local_share = table, max_length, local_share

    def start(self, tokens: Sequence[int]) -> "CopySession":
        return CopySession(self, RequestIndex(tokens))


class CopySession:
    """One decode's copy drafts: ``commit`` the tokens emitted, ``propose`` a chain after them."""

    def __init__(self, drafter: CopyDrafter, index: RequestIndex) -> None:
        self.drafter, self.index = drafter, index

    def commit(self, tokens: Sequence[int]) -> None:
        self.index.extend(tokens)

    def propose(self) -> tuple[list[int], list[float]]:
        """A chain of up to ``max_length`` tokens after the committed ones, and each token's
        value."""
        drafter, tail = self.drafter, self.index.tokens[-MAX_ORDER:]
        chain: list[int] = []
        values: list[float] = []
        value = 1.0
        while len(chain) < drafter.max_length:
            guess = self._next(tail)
            if guess is None:
                break
            token, share = guess
            value *= share
            chain.append(token)
            values.append(value)
            tail = (tail + [token])[-MAX_ORDER:]
        return chain, values

    def _next(self, tail: list[int]) -> tuple[int, float] | None:
        local = self.index.next_token(tail)
        table = self.drafter.table.next_token(tail) if self.drafter.table is not None else None
        if local is None:
            return table
        if table is not None and table[0] == local:
            return local, max(table[1], self.drafter.local_share)
        return local, self.drafter.local_share


def _little_endian(rows: array) -> array:
    import sys

    if sys.byteorder == "big":
        rows = array(rows.typecode, rows)
        rows.byteswap()
    return rows
