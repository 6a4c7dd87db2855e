"""The active health-check settings of a logs root (read-only) and how to change them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rl_board.api import REGISTRY, SETTINGS_FILE
from rl_board.ui.components.metrics_runs import render_problems
from rl_board.ui.metrics_cached import HealthSettings

EXAMPLE = """[rules.length_hacking]
limit = 0.6          # a threshold of the rule
window = 5

[rules.truncation_high]
max_length = 1024    # the generation limit, in tokens

[rules.nonfinite_tokens]
severity = "warning" # info | warning | error

[rules.entropy_collapse]
enabled = false

[rules.logprob_mismatch_trend]
ratio_limit = 1.05   # NeMo-RL's published limit for token_mult_prob_error
window = 12          # points in the rolling median
"""


def settings_table(health: HealthSettings) -> pd.DataFrame:
    """One row per rule: what it checks on, its effective severity and thresholds, on or off."""
    rows = []
    for name, rule in sorted(REGISTRY.items(), key=lambda kv: (kv[1].kind, kv[0])):
        ctx = health.settings.context(rule)
        changed = health.settings.params.get(name, {})
        params = ", ".join(f"{k}={v:g}" + (" *" if k in changed else "") for k, v in ctx.params.items())
        rows.append(
            {
                "rule": name,
                "checks": rule.kind,
                "enabled": name not in health.settings.disabled,
                "severity": ctx.severity + (" *" if name in health.settings.severity else ""),
                "thresholds": params or "—",
                "what it looks for": rule.summary,
            }
        )
    return pd.DataFrame(rows)


def render_settings(health: HealthSettings, root: Path) -> None:
    """Active thresholds (values changed by the settings file marked *) and how to change them."""
    with st.expander("Thresholds and how to change them", icon=":material/tune:"):
        render_problems(health.problems, root)
        source = root / SETTINGS_FILE
        if source.is_file():
            st.caption(f"Read from `{SETTINGS_FILE}` in the logs root; values it changes are marked *.")
        else:
            st.caption(f"Defaults: there is no `{SETTINGS_FILE}` in the logs root.")
        st.dataframe(settings_table(health), hide_index=True, width="stretch")
        st.markdown(
            f"To change a rule, put a `{SETTINGS_FILE}` in the logs root (this page reads it on every "
            "visit) with one table per rule:"
        )
        st.code(EXAMPLE, language="toml")
        st.markdown("On the command line the same settings apply, and `--set` overrides them for one check:")
        st.code(
            "rl-board check LOGS_ROOT --set length_hacking.limit=0.6 --set entropy_collapse.enabled=false",
            language="bash",
        )
