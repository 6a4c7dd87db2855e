"""The load report: a badge with the counts, and the bad lines as data (file, line, reason)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rl_board.api import BadLine, LoadReport
from rl_board.ui.text import display_name, escape_markdown


def badge_text(report: LoadReport) -> str:
    files = len(report.files)
    return f"{report.samples} samples · {report.steps} steps · {files} file{'s' if files != 1 else ''}"


def bad_text(report: LoadReport) -> str:
    bad = report.bad_line_count
    return f"{bad} bad line{'s' if bad != 1 else ''}" + (
        f" · {len(report.unreadable_files)} unreadable file(s)" if report.unreadable_files else ""
    )


def _lines_frame(lines: list[BadLine]) -> pd.DataFrame:
    return pd.DataFrame(
        [(display_name(b.file), b.line, display_name(b.reason)) for b in lines],
        columns=["file", "line", "reason"],
    )


def render_load_report(report: LoadReport) -> None:
    """Badge (green when clean) and an expander listing files, bad lines and warnings."""
    if report.notice:  # the cache folder could not be written: say what was done instead
        st.warning(escape_markdown(report.notice), icon=":material/sd_card_alert:")
    trouble = report.bad_line_count or report.unreadable_files
    st.badge(badge_text(report), icon=":material/dataset:", color="blue")
    st.badge(
        bad_text(report),
        icon=":material/warning:" if trouble else ":material/check_circle:",
        color="orange" if trouble else "green",
    )
    with st.expander("Load report", expanded=False):
        if report.read_as:
            st.caption(f"Read as {escape_markdown(report.read_as)}")
        source = "read from cache" if report.from_cache else f"parsed {report.parsed_bytes / 1e6:.2f} MB"
        st.caption(
            f"{source} in {report.seconds:.2f} s" + (" · cache rebuilt" if report.rebuilt_cache else "")
        )
        files = pd.DataFrame(
            [
                {
                    "file": display_name(f.name),
                    "format": f.format,
                    "samples": f.samples,
                    "bad": f.bad,
                    "blank": f.blank,
                    "not yet complete (bytes)": f.pending_bytes,
                    "MB": round(f.bytes / 1e6, 3),
                    "error": f.error,
                }
                for f in report.files
            ]
        )
        st.dataframe(files, hide_index=True)
        if report.length_mismatches:
            st.caption(
                f"{report.length_mismatches} sample(s) have more tokens than log-probs "
                "(token metrics are aligned to the shorter)."
            )
        if report.bad_lines:
            shown = len(report.bad_lines)
            st.markdown(
                f"**Bad lines** ({report.bad_line_count}"
                + (f", first {shown} listed" if shown < report.bad_line_count else "")
                + ")"
            )
            st.dataframe(_lines_frame(report.bad_lines), hide_index=True)
        elif report.bad_line_count:
            st.markdown(f"**Bad lines**: {report.bad_line_count}")
        if report.warnings:
            st.markdown(f"**Warnings** ({len(report.warnings)})")
            st.dataframe(_lines_frame(report.warnings), hide_index=True)
        if not report.bad_line_count and not report.warnings:
            st.caption("Every complete line was read.")
