"""Draft trees and EAGLE-2 candidate selection (pure tensors, no model).

A draft tree hangs below the *root*, the last committed token. Its nodes are
draft tokens in topological order (every parent index < child index); parent
-1 means the root. A node's score is the cumulative draft log-prob of its
path, so a parent never scores below its child.

- ``DraftTree``: the tree plus what verification and the target pass need
  (depths, ancestor mask, children lists, leaf paths).
- ``select_top_nodes``: EAGLE-2 rerank, the best ``budget`` nodes of a
  candidate pool as a connected tree.
- ``graft_chain``: a copy draft (``engine.speculative.copy_draft``) merged into a tree.
- ``TreeExpansion``: EAGLE-2 expansion bookkeeping (frontier, pool, scores),
  driven by a caller that runs the drafter.

Not here: running any model, the KV cache, verification (``engine.speculative.verify``),
the cost-aware choice of budget/depth/top-k (the harness).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

TensorLike = torch.Tensor | Sequence


@dataclass(eq=False)
class DraftTree:
    """Draft tokens below the root, topologically ordered.

    ``tokens`` [N] long, ``parents`` [N] long (-1 = root), ``scores`` [N] float.
    ``pool_indices`` [N] optionally records where each node came from in the
    candidate pool (set by ``select_top_nodes``). Siblings must carry distinct
    tokens (true for top-k drafts); verification relies on it.
    """

    tokens: torch.Tensor
    parents: torch.Tensor
    scores: torch.Tensor
    pool_indices: torch.Tensor | None = None
    depths: torch.Tensor = field(init=False, repr=False)  # [N] long, 1 = child of root
    ancestor_mask: torch.Tensor = field(init=False, repr=False)  # [N, N] bool
    children: list[list[int]] = field(init=False, repr=False)  # per node, best score first
    root_children: list[int] = field(init=False, repr=False)  # best score first
    token_list: list[int] = field(init=False, repr=False)  # tokens as Python ints
    parent_list: list[int] = field(init=False, repr=False)  # parents as Python ints

    def __post_init__(self) -> None:
        self.tokens = torch.as_tensor(self.tokens, dtype=torch.long)
        device = self.tokens.device
        self.parents = torch.as_tensor(self.parents, dtype=torch.long, device=device)
        self.scores = torch.as_tensor(self.scores, dtype=torch.float32, device=device)
        if (
            self.tokens.dim() != 1
            or self.parents.shape != self.tokens.shape
            or self.scores.shape != self.tokens.shape
        ):
            raise ValueError(
                "tokens, parents and scores must be 1-D tensors of equal length, got "
                f"{tuple(self.tokens.shape)}, {tuple(self.parents.shape)}, "
                f"{tuple(self.scores.shape)}"
            )
        self.token_list = self.tokens.tolist()
        parent_list = self.parent_list = self.parents.tolist()
        _check_parents(parent_list)
        self.children, self.root_children = _children_by_score(parent_list, self.scores.tolist())
        _check_distinct_siblings(self.token_list, self.root_children, self.children)
        depth_list, mask = _depths_and_mask(parent_list)
        self.depths = torch.tensor(depth_list, dtype=torch.long, device=device)
        self.ancestor_mask = mask.to(device)

    @classmethod
    def chain(cls, tokens: TensorLike, scores: TensorLike | None = None) -> "DraftTree":
        """A chain: node i's parent is node i-1 (scores default to 0)."""
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        n = tokens.numel()
        parents = torch.arange(-1, n - 1, dtype=torch.long, device=tokens.device)
        if scores is None:
            scores = torch.zeros(n, device=tokens.device)
        return cls(tokens, parents, scores)

    @classmethod
    def empty(cls, device: torch.device | str = "cpu") -> "DraftTree":
        """No draft tokens: verification then yields just the target's own token."""
        none = torch.zeros(0, dtype=torch.long, device=device)
        return cls(none, none.clone(), torch.zeros(0, device=device))

    @property
    def size(self) -> int:
        return len(self.token_list)

    @property
    def max_depth(self) -> int:
        return int(self.depths.max()) if self.size else 0

    def children_of(self, node: int) -> list[int]:
        """Children of ``node`` (-1 = root), best score first."""
        return self.root_children if node < 0 else self.children[node]

    def path_to(self, node: int) -> list[int]:
        """Node indices from the root's child down to ``node`` (inclusive)."""
        path = []
        while node >= 0:
            path.append(node)
            node = self.parent_list[node]
        return path[::-1]

    def leaf_paths(self) -> list[list[int]]:
        """One root-to-leaf node-index path per leaf, leaves in index order."""
        return [self.path_to(i) for i in range(self.size) if not self.children[i]]

    def positions(self, root_position: int) -> torch.Tensor:
        """Position ids [N] of the nodes when the root sits at ``root_position``."""
        return root_position + self.depths

    def depths_with_root(self) -> torch.Tensor:
        """Depths [N+1] on the CPU over (root, nodes...): the root is depth 0."""
        return torch.cat([torch.zeros(1, dtype=torch.long), self.depths.cpu()])

    def without(self, dropped: Sequence[int]) -> "DraftTree":
        """The tree minus the nodes ``dropped`` and all their descendants."""
        gone: set[int] = set()
        dropped = set(dropped)
        for i, parent in enumerate(self.parent_list):
            if i in dropped or parent in gone:
                gone.add(i)
        keep = [i for i in range(self.size) if i not in gone]
        new_index = {old: new for new, old in enumerate(keep)}
        index = torch.tensor(keep, dtype=torch.long, device=self.tokens.device)
        parents = [new_index.get(self.parent_list[i], -1) for i in keep]
        return DraftTree(
            self.tokens[index],
            parents,
            self.scores[index],
            None if self.pool_indices is None else self.pool_indices[index],
        )

    def mask_with_root(self) -> torch.Tensor:
        """Ancestor mask [N+1, N+1] over (root, nodes...): every row sees the root."""
        n = self.size
        mask = torch.zeros(n + 1, n + 1, dtype=torch.bool, device=self.tokens.device)
        mask[:, 0] = True
        mask[1:, 1:] = self.ancestor_mask
        return mask


def graft_chain(tree: DraftTree, chain: Sequence[int]) -> DraftTree:
    """``tree`` with the path ``chain`` below the root: its tokens follow existing nodes as far as
    they match, the rest hang below as new nodes (appended, so topological order holds; scored just
    below their parent, so drafted siblings keep their order ahead of them)."""
    tokens, parents, scores = list(tree.token_list), list(tree.parent_list), tree.scores.tolist()
    node = -1
    for token in chain:
        child = (
            next((c for c in tree.children_of(node) if tree.token_list[c] == token), None)
            if node < tree.size
            else None
        )
        if child is None:
            parents.append(node)
            tokens.append(token)
            scores.append((scores[node] if node >= 0 else 0.0) - 1.0)
            child = len(tokens) - 1
        node = child
    if len(tokens) == tree.size:
        return tree
    return DraftTree(
        torch.tensor(tokens, dtype=torch.long, device=tree.tokens.device), parents, scores
    )


def _check_parents(parents: list[int]) -> None:
    for i, p in enumerate(parents):
        if not -1 <= p < i:
            raise ValueError(f"node {i} has parent {p}; parents must satisfy -1 <= parent < index")


def _children_by_score(
    parents: list[int], scores: list[float]
) -> tuple[list[list[int]], list[int]]:
    """Children lists per node and of the root, decreasing score, ties by lower index."""
    children: list[list[int]] = [[] for _ in parents]
    root: list[int] = []
    for i, p in enumerate(parents):
        (root if p < 0 else children[p]).append(i)
    key = lambda i: (-scores[i], i)  # noqa: E731
    return [sorted(c, key=key) for c in children], sorted(root, key=key)


def _check_distinct_siblings(tokens: list[int], root: list[int], children: list[list[int]]) -> None:
    for kids in [root, *children]:
        if len({tokens[i] for i in kids}) != len(kids):
            raise ValueError(f"sibling nodes {kids} repeat a token; siblings must be distinct")


def _depths_and_mask(parents: list[int]) -> tuple[list[int], torch.Tensor]:
    """Depths [N] and ancestor mask [N, N]: row i = parent's row + itself."""
    n = len(parents)
    mask = torch.zeros(n, n, dtype=torch.bool)
    depths = []
    for i, p in enumerate(parents):
        if p >= 0:
            mask[i] = mask[p]
        mask[i, i] = True
        depths.append(1 if p < 0 else depths[p] + 1)
    return depths, mask


def select_top_nodes(
    tokens: TensorLike, parents: TensorLike, scores: TensorLike, budget: int
) -> DraftTree:
    """EAGLE-2 rerank: the best ``budget`` pool nodes as a connected, re-indexed tree.

    ``tokens``/``parents``/``scores`` [P] describe the candidate pool in
    generation order (parents reference pool indices or -1, parent < child).
    Ranking is by score, ties by lower pool index. A node is only taken once
    its parent is taken, so the result is connected even where a child
    outscores its parent; with cumulative log-probs (parent >= child) this is
    exactly the top ``budget`` set. Nodes scoring -inf are never taken.
    The tree keeps pool order (topological); ``pool_indices`` maps back.
    """
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    device = tokens.device
    parents = torch.as_tensor(parents, dtype=torch.long, device=device)
    scores = torch.as_tensor(scores, dtype=torch.float32, device=device)
    if tokens.dim() != 1 or parents.shape != tokens.shape or scores.shape != tokens.shape:
        raise ValueError("tokens, parents and scores must be 1-D tensors of equal length")
    if budget < 0:
        raise ValueError("budget must be >= 0")
    parent_list = parents.tolist()
    _check_parents(parent_list)
    kept = _best_connected(parent_list, scores.tolist(), budget)
    index = torch.tensor(kept, dtype=torch.long, device=device)  # [n] pool indices
    remap = {pool: new for new, pool in enumerate(kept)}
    new_parents = [remap[parent_list[i]] if parent_list[i] >= 0 else -1 for i in kept]
    return DraftTree(
        tokens[index],
        torch.tensor(new_parents, dtype=torch.long, device=device),
        scores[index],
        pool_indices=index,
    )


def _best_connected(parents: list[int], scores: list[float], budget: int) -> list[int]:
    """Pool indices (ascending) of the greedily best connected set of ``budget`` nodes."""
    children: list[list[int]] = [[] for _ in parents]
    heap = []
    for i, p in enumerate(parents):
        if p < 0:
            heap.append((-scores[i], i))
        else:
            children[p].append(i)
    heapq.heapify(heap)
    kept = []
    while heap and len(kept) < budget:
        neg_score, i = heapq.heappop(heap)
        if neg_score == float("inf"):  # score -inf: nothing useful remains
            break
        kept.append(i)
        for c in children[i]:
            heapq.heappush(heap, (-scores[c], c))
    return sorted(kept)


class TreeExpansion:
    """EAGLE-2 expansion bookkeeping; the caller runs the drafter.

    Usage::

        exp = TreeExpansion(budget, max_depth, top_k)
        exp.start(*torch.topk(root_logprobs, top_k))        # values [k], tokens [k]
        while not exp.done:
            idx, toks, parent_idx, depths = exp.frontier()
            mask = exp.frontier_ancestor_mask(idx)          # [f, P]
            logprobs = drafter(toks, ...)                   # [f, V]
            exp.extend(*torch.topk(logprobs, top_k, dim=-1))
        tree = exp.finish()

    The pool holds every candidate produced (k at the root, f*k per step);
    only frontier nodes are run through the drafter, so a frontier node's
    ancestors are all earlier frontier nodes. Tensors stay on the device of
    the inputs.
    """

    def __init__(self, budget: int, max_depth: int, top_k: int) -> None:
        if budget < 0 or max_depth < 1 or top_k < 1:
            raise ValueError("need budget >= 0, max_depth >= 1 and top_k >= 1")
        self.budget, self.max_depth, self.top_k = budget, max_depth, top_k
        self.depth = 0  # depth of the current frontier (0 = not started)
        self._tokens: list[torch.Tensor] = []  # chunks of the pool, in pool order
        self._parents: list[torch.Tensor] = []
        self._scores: list[torch.Tensor] = []
        self._depths: list[torch.Tensor] = []
        self._size = 0
        self._frontier: torch.Tensor | None = None  # [f] pool indices, ascending

    @property
    def pool_size(self) -> int:
        return self._size

    @property
    def done(self) -> bool:
        return self.depth >= self.max_depth

    def pool(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(tokens, parents, scores, depths), each [P], of the whole pool."""
        return (
            torch.cat(self._tokens),
            torch.cat(self._parents),
            torch.cat(self._scores),
            torch.cat(self._depths),
        )

    def start(self, values: torch.Tensor, tokens: torch.Tensor) -> None:
        """Root children: log-probs ``values`` [k] and ``tokens`` [k] (top-k of the root)."""
        if self.depth:
            raise RuntimeError("start() called twice")
        values, tokens = values.reshape(-1).float(), tokens.reshape(-1).long()
        parents = torch.full_like(tokens, -1)
        self._append(tokens, parents, values, 1)
        self._frontier = _best(values, self.top_k)
        self.depth = 1

    def frontier(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(pool_indices, tokens, parent_pool_indices, depths), each [f]: the drafter's next
        inputs."""
        if self._frontier is None:
            raise RuntimeError("call start() first")
        tokens, parents, _, depths = self.pool()
        idx = self._frontier
        return idx, tokens[idx], parents[idx], depths[idx]

    def set_frontier(self, pool_indices: Sequence[int] | torch.Tensor) -> None:
        """Expand these nodes of the newest level next, instead of the ``top_k`` best (a policy's
        choice)."""
        _, _, _, depths = self.pool()
        idx = (
            torch.as_tensor(pool_indices, dtype=torch.long, device=depths.device)
            .reshape(-1)
            .sort()
            .values
        )
        if idx.numel() == 0 or bool((depths[idx] != self.depth).any()):
            raise ValueError(
                f"a frontier needs one or more nodes of the newest level (depth {self.depth})"
            )
        self._frontier = idx

    def frontier_ancestor_mask(self, pool_indices: torch.Tensor) -> torch.Tensor:
        """Bool [f, P]: row j marks pool node ``pool_indices[j]`` and its ancestors."""
        parents = torch.cat(self._parents)  # [P]
        f = pool_indices.numel()
        mask = torch.zeros(f, self._size, dtype=torch.bool, device=parents.device)
        rows = torch.arange(f, device=parents.device)
        node = pool_indices.reshape(-1).to(parents.device)  # [f]
        for _ in range(self.depth):  # walk up one level per step
            alive = node >= 0
            mask[rows[alive], node[alive]] = True
            node = torch.where(alive, parents[node.clamp(min=0)], node)
        return mask

    def extend(self, logprobs: torch.Tensor, tokens: torch.Tensor) -> None:
        """Add the frontier's children: ``logprobs``/``tokens`` [f, k], rows in frontier order."""
        if self._frontier is None or self.done:
            raise RuntimeError("extend() needs a started, unfinished expansion")
        f = self._frontier.numel()
        if logprobs.shape[0] != f or tokens.shape != logprobs.shape:
            raise ValueError(
                f"expected [{f}, k] log-probs and tokens, got "
                f"{tuple(logprobs.shape)} and {tuple(tokens.shape)}"
            )
        k = logprobs.shape[1]
        _, _, scores, _ = self.pool()
        cumulative = scores[self._frontier][:, None] + logprobs.float()  # [f, k]
        parents = self._frontier[:, None].expand(f, k)  # [f, k]
        base = self._size
        self._append(
            tokens.reshape(-1).long(), parents.reshape(-1), cumulative.reshape(-1), self.depth + 1
        )
        self._frontier = base + _best(cumulative.reshape(-1), self.top_k)
        self.depth += 1

    def finish(self) -> DraftTree:
        """The best ``budget`` pool nodes as a DraftTree (``pool_indices`` map back)."""
        if self._frontier is None:
            return DraftTree.empty()
        tokens, parents, scores, _ = self.pool()
        return select_top_nodes(tokens, parents, scores, self.budget)

    def _append(
        self, tokens: torch.Tensor, parents: torch.Tensor, scores: torch.Tensor, depth: int
    ) -> None:
        self._tokens.append(tokens)
        self._parents.append(parents.to(tokens.device))
        self._scores.append(scores.to(tokens.device))
        self._depths.append(torch.full_like(tokens, depth))
        self._size += tokens.numel()


def _best(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Indices (ascending) of the ``k`` best ``scores`` [n], ties by lower index."""
    order = torch.sort(scores, descending=True, stable=True).indices[:k]
    return order.sort().values
