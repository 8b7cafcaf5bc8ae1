"""Leave-one-family-out choice of an option set: a rule is chosen without a family of pages,
then scored on that family.

A default chosen and scored on the same pages reports how well it fits them, not how it
does on pages nobody looked at. For each family F, :func:`leave_one_family_out` chooses the
candidate with the best macro mean (the mean of the per-family means, so that a large family
does not decide alone) over every family but F, and reports that candidate's score on F
beside the baseline's. A rule that wins only on the families it was chosen on shows here as
a held-out family where the chosen candidate scores below the baseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class FoldResult:
    """One fold: the family left out, the candidate chosen without it, and scores on it."""

    family: str
    pages: int
    chosen: str
    chosen_score: float
    baseline_score: float
    chosen_on_rest: float

    @property
    def gain(self) -> float:
        """Score on the held-out family of the chosen candidate minus the baseline's."""
        return self.chosen_score - self.baseline_score


def family_means(scores: Mapping[str, float], family_of: Mapping[str, str]) -> dict[str, float]:
    """Mean score of each family over the pages that have a score."""
    sums: dict[str, list[float]] = {}
    for pid, s in scores.items():
        sums.setdefault(family_of[pid], []).append(s)
    return {f: sum(v) / len(v) for f, v in sums.items()}


def macro_mean(means: Mapping[str, float], families: set[str] | None = None) -> float:
    """Mean of the per-family means (over ``families`` when given)."""
    vals = [m for f, m in means.items() if families is None or f in families]
    return sum(vals) / len(vals) if vals else float("nan")


def leave_one_family_out(
    scores: Mapping[str, Mapping[str, float]], family_of: Mapping[str, str], baseline: str
) -> list[FoldResult]:
    """For each family, the candidate of ``scores`` (candidate -> page id -> score, higher is
    better) chosen on all other families by macro mean, and its score on the left-out family
    next to ``baseline``'s. Ties go to the baseline, then to the first candidate in order, so
    a candidate must win to be chosen. Raises ``KeyError`` when ``baseline`` is not a
    candidate and ``ValueError`` when candidates were scored on different pages or the pages
    are of one family."""
    if baseline not in scores:
        raise KeyError(f"baseline {baseline!r} is not one of the candidates {list(scores)}")
    pages = set(scores[baseline])
    for name, s in scores.items():
        if set(s) != pages:
            raise ValueError(
                f"candidate {name!r} was scored on other pages than "
                f"{baseline!r} ({len(s)} vs {len(pages)})"
            )
    means = {name: family_means(s, family_of) for name, s in scores.items()}
    families = sorted({family_of[p] for p in pages})
    if len(families) < 2:
        raise ValueError(f"leave-one-family-out needs two families or more, got {families}")
    order = [baseline] + [n for n in scores if n != baseline]
    out = []
    for fam in families:
        rest = set(families) - {fam}
        best = max(order, key=lambda n: (round(macro_mean(means[n], rest), 12), -order.index(n)))
        out.append(
            FoldResult(
                fam,
                sum(family_of[p] == fam for p in pages),
                best,
                means[best][fam],
                means[baseline][fam],
                macro_mean(means[best], rest),
            )
        )
    return out


def each_against(
    scores: Mapping[str, Mapping[str, float]], family_of: Mapping[str, str], baseline: str
) -> dict[str, list[FoldResult]]:
    """Leave-one-family-out of each candidate alone against ``baseline``: for one rule of a
    default, whether the default without it (or with it, for an option) would be chosen
    without a family, and what that choice does on the family. Pooled candidates (as in
    :func:`leave_one_family_out`) hide a rule behind the fold's best one."""
    return {
        name: leave_one_family_out({baseline: scores[baseline], name: s}, family_of, baseline)
        for name, s in scores.items()
        if name != baseline
    }


def format_each(each: Mapping[str, list[FoldResult]], baseline: str) -> str:
    """One line per candidate: in each left-out family's column the gain of the choice made
    without it when the candidate was chosen, ``.`` where ``baseline`` was kept."""
    if not each:
        return ""
    fams = [f.family for f in next(iter(each.values()))]
    head = f"candidate (against {baseline})"
    lines = [f"{head:44s}" + "".join(f"{f[:9]:>10s}" for f in fams)]
    for name, folds in each.items():
        cells = [f"{f.gain:+10.3f}" if f.chosen != baseline else f"{'.':>10s}" for f in folds]
        lines.append(f"{name[:44]:44s}" + "".join(cells))
    return "\n".join(lines)


def format_folds(folds: list[FoldResult], baseline: str) -> str:
    """A plain-text table of the folds, one line each."""
    lines = [
        f"{'held-out family':24s} {'pages':>5s}  {'chosen without it':38s} "
        f"{'chosen':>7s} {baseline[:10]:>10s} {'gain':>7s}"
    ]
    for f in folds:
        lines.append(
            f"{f.family[:24]:24s} {f.pages:5d}  {f.chosen[:38]:38s} "
            f"{f.chosen_score:7.3f} {f.baseline_score:10.3f} {f.gain:+7.3f}"
        )
    return "\n".join(lines)
