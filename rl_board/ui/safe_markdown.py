"""Model text as Markdown that draws its formatting and nothing else: the Sample page's rendered view.

Pure functions (no Streamlit). ``safe_markdown`` keeps what helps reading (emphasis, headings, lists, tables,
LaTeX in ``$...$`` / ``$$...$$`` / ``\\(...\\)`` / ``\\[...\\]``, inline code and fenced code) and makes inert
what would act on the page or reach the network, as ``st.markdown`` would otherwise draw them:

- HTML: ``<`` is escaped everywhere outside code, so no tag, comment or ``<http://...>`` autolink is read;
- links and images: ``[`` and ``]`` are escaped, so ``[t](u)``, ``![a](u)``, reference links and footnotes
  show as written; so do Streamlit's directives (``:red[...]``, ``:small``: a colon before a letter is
  escaped) and its ``:streamlit:`` logo;
- bare URLs, ``www.`` addresses and e-mail addresses (which GitHub-flavoured Markdown turns into links) are
  put in code spans;
- LaTeX that could link or load (``\\href``, ``\\url``, ``\\includegraphics``, ``\\html...``) is not drawn.

The text is cut into code, math and prose as the Markdown reader will cut it, and every choice is made
explicit in the output: a span taken as code or math is written out as one (a fence longer than any run of
backticks in it, at the left margin between blank lines), and a backtick or dollar not taken is escaped, so
the reader cannot take it another way. Code spans and inline math stay on one line and never hold a table's
``|`` (a table splits its cells first); LaTeX's ``|`` becomes ``\\vert``. Backslashes in prose are escaped
too (the text shows as written), and each line break is kept as a line break.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from rl_board.ui.text import visible_bidi

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})([^`]*)$")  # any indent: a fence in a list item is code too
_INFO = re.compile(r"[^\w+#.-]")
_MATH_FENCE = re.compile(r"^ {0,3}\$\$+\s*$")
_BRACKET_OPEN = re.compile(r"^\s*\\\[\s*$")
_BRACKET_CLOSE = re.compile(r"^\s*\\\]\s*$")
_BRACKET_LINE = re.compile(r"^\s*\\\[(.+)\\\]\s*$")
# a line of a GFM table's delimiter row, as loosely as any reader takes it (inside a list or quote too)
_DELIMITER_ROW = re.compile(r"^[\s|:\-*+>.)0-9]*$")
_UNSAFE_LATEX = re.compile(r"\\(?:href|url|includegraphics|html[A-Za-z]*)(?![A-Za-z])")
# what HTML, links, images, code, math, entities and Streamlit's directives (``:red[...]``, ``:small``)
# begin with; a colon only before a letter (a table's ``:---:`` keeps its colons)
_PROSE_ESCAPE = re.compile(r"[\\`$<\[\]&]|:(?=[A-Za-z])")
# What may start a code span, math, or a link GFM would make of plain text (an address with a scheme, www.,
# an e-mail address, mailto: / xmpp:): found without backtracking, then widened by hand.
_TRIGGER = re.compile(
    r"(?P<scheme>://)|(?P<www>(?i:www)\.)|(?P<mail>(?i:mailto|xmpp):)|(?P<at>@)"
    r"|(?P<ticks>`+)|(?P<dollars>\$+)|(?P<paren>\\\()|(?P<bracket>\\\[)"
)
_ADDRESS_END = re.compile(r"[\s|]")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-")
_DOMAIN = re.compile(r"[A-Za-z0-9_\-.]+")
_TICK_RUN = re.compile(r"`+")
_DOLLAR_RUN = re.compile(r"\$+")
_ZWSP = "\u200b"  # keeps two spans apart that would otherwise touch (``a`` then ``b`` read as one)


def code_span(text: str) -> str:
    """``text`` as an inline code span: shown as written (line breaks as spaces), never read as Markdown."""
    text = " ".join(text.splitlines())
    longest = max((len(run) for run in _TICK_RUN.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _escape_prose(text: str) -> str:
    # Streamlit draws its logo (an image) for the text ``:streamlit:`` wherever it is: a zero-width space
    # keeps it text
    return _PROSE_ESCAPE.sub(lambda m: "\\" + m.group(), text.replace(":streamlit:", f":streamlit{_ZWSP}:"))


def _math(content: str) -> str | None:
    """LaTeX fit to draw (``|`` spelled as ``\\vert``), or None: empty, holding a ``$``, or able to link."""
    if not content.strip() or "$" in content or _UNSAFE_LATEX.search(content):
        return None
    return content.replace("\\|", "\\Vert ").replace("|", "\\vert ")


class _Runs:
    """Where the runs of backticks and dollars and the closing ``\\)`` / ``\\]`` of one line are, to find a
    closer without reading the line again for every opener."""

    def __init__(self, line: str) -> None:
        self.ticks: dict[int, list[int]] = {}
        for run in _TICK_RUN.finditer(line):
            self.ticks.setdefault(len(run.group()), []).append(run.start())
        self.dollars = [(m.start(), m.end()) for m in _DOLLAR_RUN.finditer(line)]
        self.closers = {c: [m.start() for m in re.finditer(re.escape(c), line)] for c in ("\\)", "\\]")}

    def ticks_after(self, pos: int, size: int) -> int | None:
        """The start of the first run of exactly ``size`` backticks at or after ``pos``."""
        starts = self.ticks.get(size, [])
        k = bisect_left(starts, pos)
        return starts[k] if k < len(starts) else None

    def dollars_after(self, pos: int) -> tuple[int, int] | None:
        k = bisect_left(self.dollars, (pos, pos))
        return self.dollars[k] if k < len(self.dollars) else None

    def closer_after(self, pos: int, closer: str) -> int | None:
        starts = self.closers[closer]
        k = bisect_left(starts, pos)
        return starts[k] if k < len(starts) else None


def _address(line: str, pos: int, found: re.Match[str]) -> tuple[int, int] | None:
    """The span ``[start, end)`` of the address (URL or e-mail) ``found`` is part of; None for an ``@`` that
    makes no e-mail address. Never starts before ``pos``."""
    start, end = found.start(), found.end()
    if found.lastgroup == "at":
        while start > pos and line[start - 1] in _LOCAL_CHARS:
            start -= 1
        domain = _DOMAIN.match(line, end)
        return (start, domain.end()) if start < found.start() and domain is not None else None
    if found.lastgroup == "scheme":
        while start > pos and line[start - 1] in _SCHEME_CHARS:
            start -= 1
    stop = _ADDRESS_END.search(line, end)
    return start, stop.start() if stop is not None else len(line)


def _inline(line: str, in_table: bool) -> str:
    """One line of prose: code spans, math, URLs and e-mail addresses written as such, the rest escaped."""
    out: list[str] = []
    runs = _Runs(line)

    def put(piece: str, span: bool = False) -> None:
        if span and out and out[-1][-1] == piece[0]:
            out.append(_ZWSP)
        if piece:
            out.append(piece)

    pos = 0
    while (found := _TRIGGER.search(line, pos)) is not None:
        kind, start, end = found.lastgroup, found.start(), found.end()
        if kind in ("scheme", "www", "mail", "at"):
            address = _address(line, pos, found)
            if address is None:
                put(_escape_prose(line[pos:end]))
            else:
                put(_escape_prose(line[pos : address[0]]))
                put(code_span(line[address[0] : address[1]]), span=True)
                end = address[1]
            pos = end
            continue
        put(_escape_prose(line[pos:start]))
        pos = end
        if kind == "ticks":
            closer = runs.ticks_after(end, end - start)
            if closer is not None and not (in_table and "|" in line[end:closer]):
                put(line[start : closer + end - start], span=True)
                pos = closer + end - start
            else:
                put("\\`" * (end - start))
        elif kind == "dollars":
            size, nxt = end - start, runs.dollars_after(end)
            math = _math(line[end : nxt[0]]) if size <= 2 and nxt and nxt[1] - nxt[0] == size else None
            if nxt is not None and math is not None:
                put("$" * size + math + "$" * size, span=True)
                pos = nxt[1]
            else:
                put("\\$" * size)
        else:
            stop = runs.closer_after(end, "\\)" if kind == "paren" else "\\]")
            math = _math(line[end:stop]) if stop is not None else None
            if stop is not None and math is not None:
                dollars = "$" if kind == "paren" else "$$"
                put(f"{dollars}{math}{dollars}", span=True)
                pos = stop + 2
            else:
                put(_escape_prose(found.group()))
    put(_escape_prose(line[pos:]))
    return "".join(out)


def _prose(lines: list[str]) -> list[str]:
    """Lines of prose, escaped; a line followed by another non-blank line ends with a hard break."""
    out: list[str] = []
    chunk: list[str] = []

    def flush() -> None:
        in_table = any("|" in x and "-" in x and _DELIMITER_ROW.match(x) for x in chunk)
        for k, x in enumerate(chunk):
            out.append(_inline(x, in_table) + ("  " if k < len(chunk) - 1 else ""))
        chunk.clear()

    for line in lines:
        if line.strip():
            chunk.append(line)
        else:
            flush()
            out.append("")
    flush()
    return out


def _code_block(content: list[str], info: str) -> list[str]:
    longest = max((len(run) for x in content for run in _TICK_RUN.findall(x)), default=0)
    fence = "`" * max(3, longest + 1)
    language = _INFO.sub("", info.split()[0]) if info.split() else ""
    return ["", fence + language, *content, fence, ""]


def _math_block(content: list[str]) -> list[str] | None:
    math = _math("\n".join(content))
    return None if math is None else ["", "$$", *math.split("\n"), "$$", ""]


def _fenced_code(lines: list[str], k: int) -> tuple[list[str], int] | None:
    """The fenced code block opening at line ``k`` (to its closing fence or the end) and the line after it."""
    opened = _FENCE.match(lines[k])
    if opened is None or (opened.group(2)[0] == "`" and "`" in opened.group(3)):
        return None
    indent, fence = len(opened.group(1)), opened.group(2)
    closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    end = next((j for j in range(k + 1, len(lines)) if closing.match(lines[j])), len(lines))
    content = [x[min(indent, len(x) - len(x.lstrip(" "))) :] for x in lines[k + 1 : end]]
    return _code_block(content, opened.group(3)), end + 1


def _display_math(lines: list[str], k: int) -> tuple[list[str], int] | None:
    """A ``$$`` / ``\\[`` block of display math opening at line ``k``, closed further on, and the line after
    it."""
    single = _BRACKET_LINE.match(lines[k])
    if single is not None:
        block = _math_block([single.group(1)])
        return (block, k + 1) if block is not None else None
    if _MATH_FENCE.match(lines[k]):
        closing = _MATH_FENCE
    elif _BRACKET_OPEN.match(lines[k]):
        closing = _BRACKET_CLOSE
    else:
        return None
    end = next((j for j in range(k + 1, len(lines)) if closing.match(lines[j]) or not lines[j].strip()), None)
    if end is None or not lines[end].strip():
        return None
    block = _math_block(lines[k + 1 : end])
    return (block, end + 1) if block is not None else None


def safe_markdown(text: str) -> str:
    """``text`` as Markdown for ``st.markdown``: its formatting, LaTeX and code drawn; no HTML, link, image or
    address read from it (see the module's docstring). Bidi controls are shown as ``⟨U+202E⟩``."""
    lines = visible_bidi(text).replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd").split("\n")
    out: list[str] = []
    prose: list[str] = []
    k = 0
    while k < len(lines):
        block = _fenced_code(lines, k) or _display_math(lines, k)
        if block is None:
            prose.append(lines[k])
            k += 1
            continue
        out += _prose(prose)
        prose = []
        out += block[0]
        k = block[1]
    out += _prose(prose)
    return "\n".join(out)
