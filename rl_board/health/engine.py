"""Health checks: rules that turn metric curves into findings.

A `Rule` is a named check with a default severity and numeric thresholds a
user may change (`rl-board.toml` in the logs root, or `--set
rule.param=value`). Rules live in a registry keyed by name and grouped by
the kind of input they take; `run_rules(kind, data)` runs those of one kind.

This module holds the machinery (findings, rules, the registry, settings,
running) and imports no rule. The rules live in `scalar_rules` (kind
"scalars": curves of metric runs, with the trainers' own diagnostics in
`field_rules`) and `rollout_rules` (kind "rollouts": per-sample rollout logs,
with the cross-checks against the trainer's logged numbers in
`trainer_rules`); `checks` imports them all and is what callers use.

A rule belongs to a `group` that says what to do about its findings
(GROUPS: training is diverging, no learning signal, the logged numbers
disagree with the data; "" for the rest), and may cite its `source` (the
doc, issue or paper its thresholds come from); the Health page shows both.

Scalar rules see one run at a time through `RunSeries`, which picks input
tags by name patterns that cover ROLL, TRL, verl and DI-engine naming; the
rules on the trainers' own diagnostics take theirs from the trainers' alias
tables (`rl_board.metrics.aliases`), which the glossary reads too.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rl_board.errors import InvalidArgumentError
from rl_board.metrics.table import Problem
from rl_board.where import Where

SEVERITIES = ("info", "warning", "error")
SETTINGS_FILE = "rl-board.toml"

DIVERGING = "training is diverging"
NO_SIGNAL = "no learning signal"
DISAGREE = "the logged numbers disagree with the data"
GROUPS = (DIVERGING, NO_SIGNAL, DISAGREE)
"""What to do about a finding, in the order the Health page shows them; a rule of none is in group ""."""


@dataclass(frozen=True)
class Finding:
    """One thing a rule noticed in one run; `link` says where its evidence is."""

    rule: str
    severity: str
    run: str
    steps: list[int]
    message: str
    link: Where | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output; ``group`` says what to do about it when its rule names one."""
        out: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity,
            "run": self.run,
            "steps": list(self.steps),
            "message": self.message,
        }
        rule = REGISTRY.get(self.rule)
        if rule is not None and rule.group:
            out["group"] = rule.group  # what to do about it (GROUPS)
        if self.link:
            out["link"] = self.link.to_dict()
        return out


@dataclass(frozen=True)
class RuleContext:
    """What a check receives besides its data: its name, severity and effective thresholds."""

    name: str
    severity: str
    params: dict[str, float]

    def finding(self, run: str, steps: Iterable[int], message: str, where: Where | None = None) -> Finding:
        """A Finding stamped with this rule's name and severity."""
        return Finding(self.name, self.severity, run, sorted({int(s) for s in steps}), message, where)


@dataclass(frozen=True)
class Rule:
    """A registered check. `check(data, ctx)` yields findings; `kind` says what data it takes; `group` what
    to do about them (one of GROUPS, or ""); `source` the doc, issue or paper behind its thresholds."""

    name: str
    kind: str
    severity: str
    summary: str
    params: dict[str, float]
    check: Callable[[Any, RuleContext], Iterable[Finding]]
    group: str = ""
    source: str = ""


REGISTRY: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    """Add a rule to the registry (names are unique; severity must be info|warning|error)."""
    if rule.severity not in SEVERITIES:
        raise ValueError(f"rule {rule.name}: severity {rule.severity!r} not in {SEVERITIES}")
    if rule.group and rule.group not in GROUPS:
        raise ValueError(f"rule {rule.name}: group {rule.group!r} not in {GROUPS}")
    if rule.name in REGISTRY and REGISTRY[rule.name] is not rule:
        raise ValueError(f"rule {rule.name!r} is already registered")
    REGISTRY[rule.name] = rule
    return rule


def scalar_rule(
    name: str, severity: str, summary: str, *, group: str = "", source: str = "", **params: float
) -> Callable[..., Any]:
    """Decorator registering a per-run scalar check `fn(series: RunSeries, ctx) -> Iterable[Finding]`."""

    def wrap(fn: Callable[[RunSeries, RuleContext], Iterable[Finding]]) -> Callable[..., Any]:
        register(Rule(name, "scalars", severity, summary, dict(params), fn, group, source))
        return fn

    return wrap


# --------------------------------------------------------------------------- settings


@dataclass
class Settings:
    """User overrides: per-rule thresholds, severities and rules turned off."""

    params: dict[str, dict[str, float]] = field(default_factory=dict)
    severity: dict[str, str] = field(default_factory=dict)
    disabled: set[str] = field(default_factory=set)

    def context(self, rule: Rule) -> RuleContext:
        """The effective thresholds and severity for one rule."""
        params = {**rule.params, **self.params.get(rule.name, {})}
        return RuleContext(rule.name, self.severity.get(rule.name, rule.severity), params)


def apply_setting(settings: Settings, rule_name: str, key: str, value: Any) -> None:
    """Set one `rule.key` (a threshold, `severity` or `enabled`); names the allowed values when wrong."""
    rule = REGISTRY.get(rule_name)
    if rule is None:
        raise InvalidArgumentError(f"unknown rule {rule_name!r}; known rules: {', '.join(sorted(REGISTRY))}")
    if key == "enabled":
        on = value if isinstance(value, bool) else str(value).lower() in {"1", "true", "yes", "on"}
        (settings.disabled.discard if on else settings.disabled.add)(rule_name)
    elif key == "severity":
        if str(value) not in SEVERITIES:
            raise InvalidArgumentError(
                f"severity {value!r} for {rule_name}: use one of {', '.join(SEVERITIES)}"
            )
        settings.severity[rule_name] = str(value)
    elif key in rule.params:
        try:
            settings.params.setdefault(rule_name, {})[key] = float(value)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"{rule_name}.{key} needs a number, got {value!r}") from None
    else:
        allowed = ", ".join([*rule.params, "severity", "enabled"])
        raise InvalidArgumentError(f"unknown setting {rule_name}.{key}; allowed: {allowed}")


def parse_set_option(settings: Settings, text: str) -> None:
    """Apply a CLI `--set rule.param=value`."""
    name, sep, value = text.partition("=")
    rule_name, dot, key = name.strip().partition(".")
    if not sep or not dot or not key:
        raise InvalidArgumentError(f"--set expects rule.param=value, got {text!r}")
    apply_setting(settings, rule_name, key.strip(), value.strip())


def load_settings(root: Path) -> tuple[Settings, list[Problem]]:
    """Read `[rules.<name>]` tables from `rl-board.toml` in `root`; bad entries become problems."""
    settings = Settings()
    problems: list[Problem] = []
    path = (root if root.is_dir() else root.parent) / SETTINGS_FILE
    if not path.is_file():
        return settings, problems
    toml = _toml_module()
    if toml is None:
        return settings, [
            Problem(str(path), "ignored: reading TOML needs Python 3.11+ or the 'tomli' package")
        ]
    try:
        data = toml.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:  # tomllib.TOMLDecodeError is a ValueError
        return settings, [Problem(str(path), f"ignored: {err}")]
    for rule_name, table in (data.get("rules") or {}).items():
        for key, value in table.items() if isinstance(table, dict) else []:
            try:
                apply_setting(settings, rule_name, key, value)
            except InvalidArgumentError as err:
                problems.append(Problem(str(path), f"ignored: {err}"))
    return settings, problems


def _toml_module() -> Any:
    """tomllib on 3.11+, else tomli when installed, else None."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:
        import tomli
    except ImportError:
        return None
    return tomli


# --------------------------------------------------------------------------- running


def run_rules(kind: str, data: Any, *, settings: Settings | None = None) -> list[Finding]:
    """Run every enabled rule of `kind` on `data` (for kinds other than scalars)."""
    settings = settings or Settings()
    out: list[Finding] = []
    for rule in REGISTRY.values():
        if rule.kind == kind and rule.name not in settings.disabled:
            out.extend(rule.check(data, settings.context(rule)))
    return out


DUPLICATE_AXIS = re.compile(r"^(collector|evaluator|learner)_step/")
TEXT_COPY = re.compile(r"^(collector|evaluator|learner)/(.+)$")


def duplicate_copies(tags: Iterable[str]) -> set[str]:
    """DI-engine's extra copies of a statistic: `x_step/` tags, and text-log tags that have an `x_iter/`
    twin."""
    present = set(tags)
    out = set()
    for tag in present:
        copy = TEXT_COPY.match(tag)
        if DUPLICATE_AXIS.match(tag) or (copy and f"{copy.group(1)}_iter/{copy.group(2)}" in present):
            out.add(tag)
    return out


@dataclass
class RunSeries:
    """One run's curves as step-indexed Series, with DI-engine's duplicate copies dropped.

    DI-engine writes each statistic three times: `x_iter/` and `x_step/`
    event tags and the text logger. Rules see the `_iter` tag (or the text
    copy when there are no event files), so a finding is not repeated.
    """

    run: str
    curves: dict[str, pd.Series]
    histograms: pd.DataFrame | None = None

    @classmethod
    def build(cls, run: str, scalars: pd.DataFrame, histograms: pd.DataFrame | None = None) -> RunSeries:
        """Group a run's rows by tag; a repeated step keeps its last value."""
        rows = scalars[scalars["run"] == run]
        curves: dict[str, pd.Series] = {}
        for tag, group in rows.groupby("tag", sort=True):
            series = group.groupby("step", sort=True)["value"].last()
            curves.setdefault(str(tag), series.astype(float))
        for tag in duplicate_copies(curves):
            del curves[tag]
        return cls(run, curves, histograms)

    def find(self, patterns: Iterable[str]) -> list[tuple[str, pd.Series]]:
        """Curves whose tag matches any of the regex patterns."""
        compiled = [re.compile(p) for p in patterns]
        return [(tag, s) for tag, s in self.curves.items() if any(c.search(tag) for c in compiled)]

    def find_histograms(self, patterns: Iterable[str]) -> list[tuple[str, pd.DataFrame]]:
        """Histogram records whose tag matches any pattern, grouped by tag."""
        if self.histograms is None or not len(self.histograms):
            return []
        compiled = [re.compile(p) for p in patterns]
        return [
            (str(tag), g.sort_values("step"))
            for tag, g in self.histograms.groupby("tag")
            if any(c.search(str(tag)) for c in compiled)
        ]


def worst_severity(findings: Iterable[Finding]) -> str | None:
    """The most severe level among findings, or None when there are none."""
    levels = [SEVERITIES.index(f.severity) for f in findings]
    return SEVERITIES[max(levels)] if levels else None


def steps_where(series: pd.Series, mask: Any) -> list[int]:
    """The steps (the index of ``series``) where ``mask`` holds; a missing (NaN) mask value does not."""
    held = mask.fillna(False).to_numpy(dtype=bool) if isinstance(mask, pd.Series) else np.asarray(mask, bool)
    return [int(s) for s in series.index[held]]


def finite_mask(values: pd.Series) -> np.ndarray:
    """True where a value is a real number (not NaN or +-Inf)."""
    return np.isfinite(values.to_numpy(dtype=float))


def robust_z(series: pd.Series, window: int, min_points: int) -> pd.Series:
    """Each point's distance from the median of the `window` points before it, in robust standard deviations.

    The spread is 1.4826 x MAD (the standard deviation for normal data); a
    flat history gets a floor of 0.1% of its median so a jump still counts.
    Points with fewer than `min_points` predecessors get NaN.
    """
    values = series.to_numpy(dtype=float)
    padded = np.concatenate([np.full(window, np.nan), values])
    history = np.lib.stride_tricks.sliding_window_view(
        padded[:-1], window
    )  # row i = the window before point i
    enough = (~np.isnan(history)).sum(axis=1) >= max(1, min_points)
    z = np.full(len(values), np.nan)
    if enough.any():
        rows = history[enough]
        median = np.nanmedian(rows, axis=1)
        mad = np.nanmedian(np.abs(rows - median[:, None]), axis=1)
        scale = np.maximum(1.4826 * mad, 1e-3 * np.abs(median) + 1e-12)
        z[enough] = (values[enough] - median) / scale
    return pd.Series(z, index=series.index)
