"""Token ids as text, with a local tokenizer (the ``tokenizers`` library; nothing is fetched).

NeMo-RL and prime-rl log token ids, not token strings. With ``--tokenizer``
pointing at a ``tokenizer.json`` (or a model folder holding one), each id
is shown as the text it adds to the answer; without one, ids are shown as ids.

One id is not always a whole character: a byte-level BPE (GPT-2, Llama 3,
Qwen) splits a Chinese character or an emoji over two to four tokens, and
decoding such a token alone gives replacement characters. So ids are decoded
in runs, and the rule is: **a character belongs to the token that completes
it**; the tokens holding its earlier bytes show an empty string. Joined, the
pieces are exactly the decoding of the whole sequence (a sequence cut inside
a character ends with the replacement character, as its decoding does). An
id the vocabulary lacks is shown as ``#id`` and splits the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rl_board.errors import NotFoundError

TOKENIZER_FILE = "tokenizer.json"
REPLACEMENT = "\ufffd"  # what a decoder gives for bytes that are not (yet) a whole character
MAX_HELD = 4  # a UTF-8 character has at most 4 bytes, so at most 4 tokens wait for its last one


class TokenText:
    """Decodes token ids to one text piece per token (see the module docstring for the rule)."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer  # imported here: only runs with token ids need it

        file = path / TOKENIZER_FILE if path.is_dir() else path
        if not file.is_file():
            raise NotFoundError(f"no {TOKENIZER_FILE} at {path}")
        try:
            self._tokenizer = Tokenizer.from_file(str(file))
        except Exception as exc:
            raise NotFoundError(
                f"{file} is not a tokenizer file the tokenizers library reads ({exc})"
            ) from None
        self.path = file

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """One text piece per id; their concatenation is the decoding of the known ids, run by run."""
        out: list[str] = []
        run: list[int] = []
        for token_id in map(int, ids):
            if self._tokenizer.id_to_token(token_id) is None:
                out += self._run_pieces(run)
                out.append(f"#{token_id}")
                run = []
            else:
                run.append(token_id)
        return out + self._run_pieces(run)

    def _run_pieces(self, ids: list[int]) -> list[str]:
        """Incremental decoding: each new token's text is what it adds to a window that starts at the last
        piece shown (that piece is context, so decoders that treat a sequence's start apart stay exact)."""
        out: list[str] = []
        context = shown = 0  # ids[context:shown] is the last piece shown; ids[shown:] wait for text
        for end in range(1, len(ids) + 1):
            before = self._decode(ids[context:shown])
            now = self._decode(ids[context:end])
            held = end - shown
            if now.endswith(REPLACEMENT) and end < len(ids) and held < MAX_HELD:
                out.append("")  # an unfinished character: its last token will show it
                continue
            out.append(now[len(before) :])
            context, shown = shown, end
        return out

    def _decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids, skip_special_tokens=False) if ids else ""


def as_ids(ids: Sequence[int]) -> list[str]:
    """Ids shown as ids, when no tokenizer is given."""
    return [f"#{int(i)}" for i in ids]
