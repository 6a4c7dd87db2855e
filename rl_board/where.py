"""Where to look: a run, a step, a sample, a sort and filters — one value type for every joint.

Health findings say where their evidence is with a ``Where``; the Health page
turns it into view state; deep links and the step browser read and write the
same fields. Filter ranges are keyed by the catalogue's filter keys
(``reward``, ``kl``, ``len``; see ``rollouts/fields.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Bounds = tuple[float | None, float | None]


@dataclass(frozen=True)
class Where:
    """A place in the data. Every part is optional; a finding fills what it knows."""

    run: str | None = None
    step: int | None = None
    sample: int | None = None
    sort: str | None = None
    desc: bool = False
    text: str = ""  # searched in prompt, response and ground truth
    ranges: dict[str, Bounds] = field(default_factory=dict)  # filter key -> (low, high)
    contains: dict[str, str] = field(
        default_factory=dict
    )  # a text filter of the step browser -> the text it holds
    tag: str | None = None  # a metric tag (for findings on training metrics)

    @property
    def has_filters(self) -> bool:
        return (
            bool(self.text)
            or any(b != (None, None) for b in self.ranges.values())
            or any(self.contains.values())
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (``check --json``'s ``link``): only the parts that are set."""
        out: dict[str, Any] = {}
        for name in ("run", "step", "sample", "sort", "tag"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.sort is not None:
            out["desc"] = self.desc
        filters: dict[str, Any] = {"search": self.text} if self.text else {}
        filters.update({k: [lo, hi] for k, (lo, hi) in self.ranges.items()})
        filters.update({k: v for k, v in self.contains.items() if v})
        if filters:
            out["filters"] = filters
        return out

    def describe(self, labels: dict[str, str] | None = None) -> str:
        """The filters and sort in words ("text contains 'x'; length ≥ 64; sorted by reward descending")."""
        labels = labels or {}
        parts = [f"text contains {self.text[:40]!r}"] if self.text else []
        for key, (low, high) in self.ranges.items():
            name = labels.get(key, key)
            sides = [
                f"{name} ≥ {low:.4g}" if low is not None else "",
                f"{name} ≤ {high:.4g}" if high is not None else "",
            ]
            parts.append(" and ".join(p for p in sides if p))
        parts += [
            f"{labels.get(key, key)} contains {value[:40]!r}" for key, value in self.contains.items() if value
        ]
        if self.sort:
            parts.append(f"sorted by {labels.get(self.sort, self.sort)}{' descending' if self.desc else ''}")
        return "; ".join(p for p in parts if p)
