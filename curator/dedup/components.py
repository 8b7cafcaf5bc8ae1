"""Connected components of the duplicate graph and the choice of the copy to keep.

Components are found by min-label propagation with pointer jumping over the edge list, in
numpy (no Python loop per edge); only documents that appear in an edge take part, so memory
follows the number of candidate duplicates, not the corpus size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, kw_only=True)
class EdgeFile:
    """A phase result: candidate duplicate edges written to ``path`` (arrays ``u``, ``v`` of
    document references), and how many."""

    path: str
    edges: int


def connected_components(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes, labels)``: the distinct nodes of the edges ``u[i] - v[i]`` and, for each, the
    smallest node of its component."""
    nodes, inv = np.unique(np.concatenate([u, v]), return_inverse=True)
    m = u.shape[0]
    a, b = inv[:m], inv[m:]
    lab = np.arange(nodes.shape[0], dtype=np.int64)
    while True:
        low = np.minimum(lab[a], lab[b])
        np.minimum.at(lab, a, low)
        np.minimum.at(lab, b, low)
        while True:  # pointer jumping: lab[x] <- lab[lab[x]] until it stops changing
            nxt = lab[lab]
            if np.array_equal(nxt, lab):
                break
            lab = nxt
        if np.array_equal(lab[a], lab[b]):
            break
    return nodes, nodes[lab]


def choose_keepers(labels: np.ndarray, *priority: np.ndarray) -> np.ndarray:
    """For each node, the position (in the same arrays) of its component's kept node: the one
    with the smallest ``priority`` keys (first key most significant)."""
    order = np.lexsort(tuple(reversed(priority)) + (labels,))
    lab_sorted = labels[order]
    first = np.r_[True, lab_sorted[1:] != lab_sorted[:-1]]
    group = np.cumsum(first) - 1
    keeper_sorted = order[first][group]
    keepers = np.empty_like(order)
    keepers[order] = keeper_sorted
    return keepers
