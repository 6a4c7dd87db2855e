"""Health checks: rules that turn metric curves into findings.

A `Rule` is a named check with a default severity and numeric thresholds a
user may change (`rl-board.toml` in the logs root, or `--set
rule.param=value`). Rules live in a registry keyed by name and grouped by
the kind of input they take: this module registers the "scalars" rules;
another module can `register()` rules of another kind (e.g. "rollouts")
and run them with `run_rules()` on its own input.

Scalar rules see one run at a time through `RunSeries`, which picks input
tags by name patterns that cover ROLL, TRL, verl and DI-engine naming.
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

from rl_board.data.scalars.table import Problem
from rl_board.errors import InvalidArgumentError

SEVERITIES = ("info", "warning", "error")
SETTINGS_FILE = "rl-board.toml"


@dataclass(frozen=True)
class Finding:
    """One thing a rule noticed in one run. `link` hints where to look, e.g. {"step": 12, "tag": "..."}."""

    rule: str
    severity: str
    run: str
    steps: list[int]
    message: str
    link: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        out = {"rule": self.rule, "severity": self.severity, "run": self.run, "steps": list(self.steps),
               "message": self.message}  # fmt: skip
        if self.link:
            out["link"] = dict(self.link)
        return out


@dataclass(frozen=True)
class RuleContext:
    """What a check receives besides its data: its name, severity and effective thresholds."""

    name: str
    severity: str
    params: dict[str, float]

    def finding(self, run: str, steps: Iterable[int], message: str, **link: Any) -> Finding:
        """A Finding stamped with this rule's name and severity."""
        return Finding(self.name, self.severity, run, sorted({int(s) for s in steps}), message, link or None)


@dataclass(frozen=True)
class Rule:
    """A registered check. `check(data, ctx)` yields findings; `kind` says what data it takes."""

    name: str
    kind: str
    severity: str
    summary: str
    params: dict[str, float]
    check: Callable[[Any, RuleContext], Iterable[Finding]]


REGISTRY: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    """Add a rule to the registry (names are unique; severity must be info|warning|error)."""
    if rule.severity not in SEVERITIES:
        raise ValueError(f"rule {rule.name}: severity {rule.severity!r} not in {SEVERITIES}")
    if rule.name in REGISTRY and REGISTRY[rule.name] is not rule:
        raise ValueError(f"rule {rule.name!r} is already registered")
    REGISTRY[rule.name] = rule
    return rule


def scalar_rule(name: str, severity: str, summary: str, **params: float) -> Callable[..., Any]:
    """Decorator registering a per-run scalar check `fn(series: RunSeries, ctx) -> Iterable[Finding]`."""

    def wrap(fn: Callable[[RunSeries, RuleContext], Iterable[Finding]]) -> Callable[..., Any]:
        register(Rule(name, "scalars", severity, summary, dict(params), fn))
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
    settings, problems = Settings(), []
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
        import tomli  # type: ignore[import-not-found]
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


def check_scalars(
    scalars: pd.DataFrame, *, histograms: pd.DataFrame | None = None, settings: Settings | None = None
) -> list[Finding]:
    """Run the scalar rules on every run of a long scalar table (and its histograms)."""
    findings: list[Finding] = []
    for run in sorted(scalars["run"].unique()) if len(scalars) else []:
        hist = histograms[histograms["run"] == run] if histograms is not None and len(histograms) else None
        findings.extend(run_rules("scalars", RunSeries.build(str(run), scalars, hist), settings=settings))
    return findings


DUPLICATE_AXIS = re.compile(r"^(collector|evaluator|learner)_step/")
TEXT_COPY = re.compile(r"^(collector|evaluator|learner)/(.+)$")


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
        for tag in list(curves):
            copy = TEXT_COPY.match(tag)
            if DUPLICATE_AXIS.match(tag) or (copy and f"{copy.group(1)}_iter/{copy.group(2)}" in curves):
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
        return [(str(tag), g.sort_values("step")) for tag, g in self.histograms.groupby("tag")
                if any(c.search(str(tag)) for c in compiled)]  # fmt: skip


def worst_severity(findings: Iterable[Finding]) -> str | None:
    """The most severe level among findings, or None when there are none."""
    levels = [SEVERITIES.index(f.severity) for f in findings]
    return SEVERITIES[max(levels)] if levels else None


def finite_mask(values: pd.Series) -> np.ndarray:
    """True where a value is a real number (not NaN or +-Inf)."""
    return np.isfinite(values.to_numpy(dtype=float))


# --------------------------------------------------------------------------- scalar rules
# Tag patterns (regex, searched in the full tag) for each input a rule needs.

VALUE_LOSS = (r"^ppo/loss/value$", r"^critic/(loss|vf_loss)$", r"(^|/)value_loss(_avg)?$")
RATIO_MEAN = (r"(^|/)(ppo_)?ratio_mean$",)
RATIO_MAX = (r"(^|/)(ppo_)?ratio_max$",)
RATIO_HIST = (r"^ppo/policy/ratio$", r"(^|/)ratio$")
POLICY_CLIPFRAC = (r"^ppo/policy/clipfrac$", r"^actor/(pg_|ppo_ratio_)?clipfrac$", r"(^|/)clipfrac_avg$")
APPROX_KL = (r"^ppo/policy/approxkl$", r"^actor/(approxkl|ppo_kl)$", r"(^|/)approx_kl(_avg)?$")
REF_KL = (r"^objective/kl$", r"^actor/(kl_loss|reward_kl_penalty)$", r"^critic/kl$")
KL_COEF = (r"^objective/kl_coef$", r"^actor/(kl_coef|reward_kl_penalty_coeff)$", r"(^|/)kl_(ctl|coeff?)$")
ENTROPY = (r"^objective/entropy$", r"^ppo/policy/entropy$", r"^actor/entropy$", r"^critic/entropy/mean$",
           r"(^|/)entropy(_loss)?_avg$")  # fmt: skip
REWARD = (r"^env/reward_mean$", r"^critic/(score|rewards)/mean$", r"^ppo/mean_scores$", r"^val/score/mean$",
          r"(^|/)reward_mean$")  # fmt: skip


def _steps(series: pd.Series, mask: Any) -> list[int]:
    """The steps (index) where a boolean mask holds."""
    return [int(s) for s in series.index[np.asarray(mask, dtype=bool)]]


def _finite(series: pd.Series) -> pd.Series:
    """The series without NaN/Inf points (rules other than non_finite look at real numbers only)."""
    return series[finite_mask(series)]


def _window(ctx: RuleContext, key: str = "window") -> int:
    """An integer window length of at least 1."""
    return max(1, int(ctx.params[key]))


@scalar_rule("non_finite", "error", "A metric became NaN or infinite.")
def _non_finite(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    for tag, series in data.curves.items():
        bad = ~finite_mask(series)
        if bad.any():
            steps = _steps(series, bad)
            yield ctx.finding(data.run, steps, f"{tag} is NaN/Inf at {len(steps)} step(s), first at step {steps[0]}",
                              step=steps[0], tag=tag)  # fmt: skip


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


@scalar_rule("value_loss_spike", "warning", "Value loss jumped far above its recent median (robust z-score).",
             window=20, z=8.0, min_points=8)  # fmt: skip
def _value_loss_spike(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    for tag, series in data.find(VALUE_LOSS):
        finite = _finite(series)
        z = robust_z(finite, _window(ctx), int(ctx.params["min_points"]))
        steps = _steps(finite, z > ctx.params["z"])
        if steps:
            peak = int(z.idxmax())
            yield ctx.finding(data.run, steps, f"{tag} spiked {len(steps)} time(s); largest at step {peak} "
                              f"({finite[peak]:.4g}, robust z {z[peak]:.1f})", step=peak, tag=tag)  # fmt: skip


@scalar_rule("policy_ratio", "warning", "Policy probability ratio far from 1 (mean) or very large (max).",
             mean_tolerance=0.2, max_limit=10.0)  # fmt: skip
def _policy_ratio(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    tol, limit = ctx.params["mean_tolerance"], ctx.params["max_limit"]
    means = data.find(RATIO_MEAN) + [(f"{t} (mean)", s) for t, s in _histogram_stats(data, "mean")]
    maxes = data.find(RATIO_MAX) + [(f"{t} (max)", s) for t, s in _histogram_stats(data, "max")]
    for tag, series in means:
        finite = _finite(series)
        steps = _steps(finite, (finite - 1).abs() > tol)
        if steps:
            yield ctx.finding(data.run, steps, f"{tag} is more than {tol:g} away from 1 at {len(steps)} step(s)",
                              step=steps[0], tag=tag.split(" ")[0])  # fmt: skip
    for tag, series in maxes:
        finite = _finite(series)
        steps = _steps(finite, finite > limit)
        if steps:
            yield ctx.finding(data.run, steps, f"{tag} exceeds {limit:g} at {len(steps)} step(s) "
                              f"(peak {finite.max():.4g})", step=steps[0], tag=tag.split(" ")[0])  # fmt: skip


def _histogram_stats(data: RunSeries, stat: str) -> list[tuple[str, pd.Series]]:
    """Mean (bucket-centre weighted) or max (right edge of the last non-empty bucket) of ratio histograms."""
    out = []
    for tag, records in data.find_histograms(RATIO_HIST):
        values = {}
        for step, left, right, count in zip(records["step"], records["left"], records["right"], records["count"],
                                            strict=True):  # fmt: skip
            counts = np.asarray(count, dtype=float)
            if counts.sum() <= 0:
                continue
            centres = (np.asarray(left, dtype=float) + np.asarray(right, dtype=float)) / 2
            if stat == "mean":
                values[int(step)] = float((centres * counts).sum() / counts.sum())
            else:
                values[int(step)] = float(np.asarray(right, dtype=float)[counts > 0].max())
        out.append((tag, pd.Series(values, dtype=float).sort_index()))
    return out


def _rolling_high(name: str, patterns: tuple[str, ...], what: str, limit: float) -> None:
    """Register a rule firing where the rolling mean of a statistic stays above a limit."""

    def check(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
        for tag, series in data.find(patterns):
            finite = _finite(series)
            rolling = finite.rolling(_window(ctx), min_periods=_window(ctx)).mean()
            steps = _steps(finite, rolling > ctx.params["limit"])
            if steps:
                yield ctx.finding(data.run, steps, f"{tag}: {what} averaged above {ctx.params['limit']:g} over "
                                  f"{_window(ctx)} points at {len(steps)} step(s) (peak mean {rolling.max():.3g})",
                                  step=steps[0], tag=tag)  # fmt: skip

    register(
        Rule(
            name, "scalars", "warning", f"{what} high (rolling mean).", {"limit": limit, "window": 5.0}, check
        )
    )


_rolling_high("clipfrac_high", POLICY_CLIPFRAC, "share of clipped tokens", 0.3)
_rolling_high("approxkl_high", APPROX_KL, "per-update approximate KL", 0.05)


@scalar_rule("kl_negative", "warning", "KL to the reference policy went negative.", tolerance=1e-3)
def _kl_negative(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    for tag, series in data.find(REF_KL):
        finite = _finite(series)
        steps = _steps(finite, finite < -ctx.params["tolerance"])
        if steps:
            yield ctx.finding(data.run, steps, f"{tag} is negative at {len(steps)} step(s) (lowest "
                              f"{finite.min():.4g}); KL to the reference should stay >= 0", step=steps[0], tag=tag)  # fmt: skip


@scalar_rule("kl_coef_rising", "warning", "Adaptive KL coefficient rising steadily.",
             window=10, min_rise=0.5, min_up_fraction=0.8)  # fmt: skip
def _kl_coef_rising(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    window = _window(ctx)
    for tag, series in data.find(KL_COEF):
        finite = _finite(series)
        ups = (finite.diff() > 0).astype(float).rolling(window, min_periods=window).mean()
        rise = finite / finite.shift(window).abs().clip(lower=1e-12) - 1
        steps = _steps(finite, (ups >= ctx.params["min_up_fraction"]) & (rise >= ctx.params["min_rise"]))
        if steps:
            yield ctx.finding(data.run, steps, f"{tag} rose by more than {ctx.params['min_rise']:.0%} over "
                              f"{window} points at {len(steps)} step(s)", step=steps[0], tag=tag)  # fmt: skip


@scalar_rule("entropy_collapse", "warning", "Policy entropy fell to a small fraction of its early level.",
             early_points=5, fraction=0.1, window=5)  # fmt: skip
def _entropy_collapse(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    for tag, series in data.find(ENTROPY):
        finite = _finite(series)
        if len(finite) <= int(ctx.params["early_points"]) or (finite < 0).any():
            continue  # negative values: differential entropy of continuous actions, where "near 0" means nothing
        early = float(finite.iloc[: int(ctx.params["early_points"])].median())
        rolling = finite.rolling(_window(ctx), min_periods=1).median()
        steps = _steps(
            finite,
            (rolling < ctx.params["fraction"] * early)
            & (np.arange(len(finite)) >= ctx.params["early_points"]),
        )
        if early > 0 and steps:
            yield ctx.finding(data.run, steps, f"{tag} fell below {ctx.params['fraction']:.0%} of its early level "
                              f"({early:.3g}) from step {steps[0]}", step=steps[0], tag=tag)  # fmt: skip


@scalar_rule("reward_stalls_kl_rises", "warning",
             "Reward plateaued or declined after a peak while KL to the reference kept rising.",
             window=10, plateau_tolerance=0.1, decline_fraction=0.2, kl_rise=0.1)  # fmt: skip
def _reward_stalls_kl_rises(data: RunSeries, ctx: RuleContext) -> Iterable[Finding]:
    window = _window(ctx)
    for (rtag, reward), (ktag, kl) in ((r, k) for r in data.find(REWARD) for k in data.find(REF_KL)):
        both = pd.concat([_finite(reward), _finite(kl)], axis=1, keys=["r", "k"], join="inner")
        if len(both) < 2 * window:
            continue
        r_now, k_now = both["r"].rolling(window).mean(), both["k"].rolling(window).mean()
        r_before, k_before = r_now.shift(window), k_now.shift(window)
        scale = float(both["r"].std()) or 1e-12
        plateau = (r_now - r_before).abs() <= ctx.params["plateau_tolerance"] * scale
        peak = r_now.cummax()
        decline = (peak - r_now) > ctx.params["decline_fraction"] * (
            peak - float(both["r"].iloc[0])
        ).abs().clip(lower=1e-12)
        kl_up = (k_now - k_before) > ctx.params["kl_rise"] * k_before.abs().clip(lower=1e-12)
        steps = _steps(both, (plateau | decline) & kl_up)
        if steps:
            yield ctx.finding(data.run, steps, f"{rtag} stopped improving (plateau or decline) while {ktag} kept "
                              f"rising, from step {steps[0]} ({len(steps)} step(s))", step=steps[0], tag=rtag)  # fmt: skip
