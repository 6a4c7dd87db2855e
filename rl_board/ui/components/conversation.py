"""A sample logged as chat messages, shown as the conversation: one block per message, as text (or, in the
rendered view, as safe Markdown)."""

from __future__ import annotations

import streamlit as st

from rl_board.api import message_text
from rl_board.ui.components.text_block import answer_block, text_block
from rl_board.ui.text import TextDisplay, escape_markdown, shown

MESSAGE_HEIGHT = 240  # px: a long system or user message scrolls; an assistant's reads whole


def render_conversation(messages: list[dict], display: TextDisplay, *, rendered: bool = False) -> None:
    """Each message: its role and size, then its content (model text is never HTML or a link). An assistant
    message reads at full width and height, its thinking folded; the last one also shows its final answer."""
    st.markdown(f"**Conversation** · {len(messages)} messages")
    last = max((k for k, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    for k, message in enumerate(messages):
        text = shown(message_text(message.get("content")) or "", display)
        role = str(message.get("role", "?"))
        st.caption(
            f"{escape_markdown(role)} · {len(text.text)} characters"
            + (f" · {text.note}" if text.note else "")
        )
        if role == "assistant":
            answer_block(text.text, rendered=rendered, key=f"message_{k}", final=k == last)
        else:
            text_block(text.text, height=MESSAGE_HEIGHT, rendered=rendered)
