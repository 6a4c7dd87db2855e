"""What a load found: per-file counts and every line that could not be used."""

from __future__ import annotations

from dataclasses import dataclass, field

from rl_board.rollouts.cache.sync import FileEntry


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

    @property
    def bad_line_count(self) -> int:
        """All bad lines, including those beyond the per-file detail limit."""
        return sum(f.bad for f in self.files)

    @property
    def unreadable_files(self) -> list[FileReport]:
        return [f for f in self.files if f.error]


def build_report(run: str, entries: list[FileEntry]) -> LoadReport:
    """Turn cache entries into a report (counts are kept in the manifest)."""
    report = LoadReport(run=run)
    for e in entries:
        report.files.append(
            FileReport(e.name, e.size, e.lines, e.samples, e.bad_count, e.blank,
                       max(0, e.size - e.consumed), e.error)
        )
        report.bad_lines += [BadLine(e.name, int(line), str(reason)) for line, reason in e.bad]
        report.warnings += [BadLine(e.name, int(line), str(reason)) for line, reason in e.warnings]
    report.samples = sum(e.samples for e in entries)
    return report
