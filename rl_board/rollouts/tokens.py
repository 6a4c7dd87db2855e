"""Token ids as text, with a local tokenizer (the ``tokenizers`` library; nothing is fetched).

NeMo-RL and prime-rl log token ids, not token strings. With ``--tokenizer``
pointing at a ``tokenizer.json`` (or a model folder holding one), each id
is shown as the text it decodes to; without one, ids are shown as ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rl_board.errors import NotFoundError

TOKENIZER_FILE = "tokenizer.json"


class TokenText:
    """Decodes token ids one by one, so each token keeps its own piece of text."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer  # imported here: only runs with token ids need it

        file = path / TOKENIZER_FILE if path.is_dir() else path
        if not file.is_file():
            raise NotFoundError(f"no {TOKENIZER_FILE} at {path}")
        try:
            self._tokenizer = Tokenizer.from_file(str(file))
        except Exception as exc:
            raise NotFoundError(f"{file} is not a tokenizer file the tokenizers library reads ({exc})") from None
        self.path = file

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """One text piece per id (an id the vocabulary lacks is shown as ``#id``)."""
        out = []
        for token_id in ids:
            text = self._tokenizer.decode([int(token_id)], skip_special_tokens=False)
            out.append(text if text else self._tokenizer.id_to_token(int(token_id)) or f"#{token_id}")
        return out


def as_ids(ids: Sequence[int]) -> list[str]:
    """Ids shown as ids, when no tokenizer is given."""
    return [f"#{int(i)}" for i in ids]
