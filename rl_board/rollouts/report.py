"""What a load found: per-file counts and every line that could not be used."""

from __future__ import annotations

from dataclasses import dataclass, field

from rl_board.formats import Format
from rl_board.rollouts.cache.manifest import FileEntry


@dataclass(frozen=True)
class BadLine:
    file: str
    line: int
    reason: str


@dataclass(frozen=True)
class FileReport:
    """Counts for one file; ``lines`` = samples + bad + blank (complete lines only)."""

    name: str
    bytes: int
    lines: int
    samples: int
    bad: int
    blank: int
    pending_bytes: int
    error: str = ""
    format: str = ""


@dataclass
class LoadReport:
    """The load report of a run, safe to show to users as it is."""

    run: str
    files: list[FileReport] = field(default_factory=list)
    bad_lines: list[BadLine] = field(default_factory=list)
    warnings: list[BadLine] = field(default_factory=list)
    samples: int = 0
    steps: int = 0
    length_mismatches: int = 0
    from_cache: bool = False
    rebuilt_cache: bool = False
    parsed_bytes: int = 0
    seconds: float = 0.0
    formats: dict[str, str] = field(default_factory=dict)  # format name -> how it was read, in words
    _field_map: dict[str, str] = field(default_factory=dict)
    mapped: str = ""  # the field map the user gave, in words
    notice: str = ""  # the cache folder could not be written: what was done instead
    turns_how: dict[str, int] = field(
        default_factory=dict
    )  # samples whose turns were split from text, by how
    turns_whole: dict[str, int] = field(default_factory=dict)  # samples whose text was kept whole, by why

    @property
    def format(self) -> str:
        """The run's format name ("verl"), or names joined with "+" when its files differ."""
        return "+".join(sorted(self.formats))

    @property
    def field_map(self) -> dict[str, str]:
        """rl-board field -> the key it was read from, where the two differ."""
        return dict(self._field_map)

    @property
    def read_as(self) -> str:
        """How the run was read, in words, for the sidebar and the load report."""
        return "; ".join([*self.formats.values(), *([self.mapped] if self.mapped else [])])

    @property
    def turns_read(self) -> str:
        """How trajectories were found in decoded chat text, and where text was kept as one turn, in words."""
        parts = []
        if self.turns_how:
            how = ", ".join(f"{name} {n}" for name, n in sorted(self.turns_how.items()))
            n = sum(self.turns_how.values())
            parts.append(f"turns split from the chat text of {n} sample{'s' * (n != 1)} ({how})")
        if self.turns_whole:
            why = "; ".join(f"{name} ({n})" for name, n in sorted(self.turns_whole.items()))
            n = sum(self.turns_whole.values())
            parts.append(f"{n} sample{'s' * (n != 1)} that looked like chat not split: {why}")
        return "; ".join(parts)

    @property
    def bad_line_count(self) -> int:
        """All bad lines, including those beyond the per-file detail limit."""
        return sum(f.bad for f in self.files)

    @property
    def unreadable_files(self) -> list[FileReport]:
        return [f for f in self.files if f.error]


def build_report(
    run: str,
    entries: list[FileEntry],
    formats: dict[str, Format] | None = None,
    user_map: dict[str, str] | None = None,
) -> LoadReport:
    """Turn cache entries into a report (counts are kept in the manifest)."""
    report = LoadReport(run=run)
    formats = formats or {}
    for e in entries:
        fmt = formats.get(e.name)
        report.files.append(
            FileReport(
                e.name,
                e.size,
                e.lines,
                e.samples,
                e.bad_count,
                e.blank,
                max(0, e.size - e.consumed),
                e.error,
                fmt.name if fmt else "",
            )
        )
        if fmt is not None:
            report.formats.setdefault(fmt.name, _read_as(fmt))
            report._field_map.update({dst: src for src, dst in fmt.field_map if src != dst})
        report.bad_lines += [BadLine(e.name, int(line), str(reason)) for line, reason in e.bad]
        report.warnings += [BadLine(e.name, int(line), str(reason)) for line, reason in e.warnings]
        for mine, counts in (
            (report.turns_how, e.turns.get("how", {})),
            (report.turns_whole, e.turns.get("kept whole", {})),
        ):
            for name, n in counts.items():
                mine[name] = mine.get(name, 0) + int(n)
    if user_map:
        report._field_map.update({k: v for k, v in user_map.items() if k != v})
        mapped = ", ".join(f"{src} → {dst.replace('_', ' ')}" for dst, src in user_map.items())
        report.mapped = f"field map: {mapped}"
    report.samples = sum(e.samples for e in entries)
    return report


def _read_as(fmt: Format) -> str:
    kept = f"; kept as columns: {', '.join(fmt.kept)}" if fmt.kept else ""
    notes = f" ({fmt.notes})" if fmt.notes else ""
    return fmt.describe() + notes + kept
