"""A sample logged as chat messages, shown as the conversation: one block per message, as text."""

from __future__ import annotations

import streamlit as st

from rl_board.api import message_text
from rl_board.ui.components.text_block import text_block
from rl_board.ui.text import TextDisplay, escape_markdown, shown


def render_conversation(messages: list[dict], display: TextDisplay) -> None:
    """Each message: its role and size, then its content as plain text (model text is never markup)."""
    st.markdown(f"**Conversation** · {len(messages)} messages")
    for message in messages:
        text = shown(message_text(message.get("content")) or "", display)
        role = str(message.get("role", "?"))
        st.caption(
            f"{escape_markdown(role)} · {len(text.text)} characters"
            + (f" · {text.note}" if text.note else "")
        )
        text_block(text.text, height=240)
