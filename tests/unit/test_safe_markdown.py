"""``safe_markdown``: model text drawn as Markdown (formatting, LaTeX, code); nothing in it acts or fetches.

Every output is read back by a CommonMark reader (markdown-it, with tables and raw HTML allowed, so that HTML
left unescaped would show): no link, image or HTML may come out of it, only the tags plain formatting makes,
and no text may hold an address that GitHub-flavoured Markdown would turn into a link. The inputs: the
injection payloads the browser tests use, every text of the hostile rollout corpus (tests/hostile.py), cases
made to fool a reader that cuts code, math and tables differently, and generated text.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it.common.utils import escapeHtml

from rl_board.ui.safe_markdown import code_span, safe_markdown
from tests import hostile
from tests.helpers.markdown_payloads import PAYLOADS

markdown_it = pytest.importorskip("markdown_it")  # the reader the checks use (installed with rich)


def _hostile_corpus(tmp: Path) -> list[str]:
    """Every text the hostile rollout corpus writes: each file as text, and each string in its JSON lines."""
    texts: list[str] = []
    for case in hostile.cases():
        run = tmp / re.sub(r"\W+", "_", case.name)
        run.mkdir()
        try:
            case.write(run)
        except OSError:  # a case the file system here refuses (a FIFO, a sparse file...)
            continue
        for path in sorted(run.iterdir()):
            if not path.is_file() or path.stat().st_size > 1_000_000:
                continue
            try:
                raw = path.read_bytes().decode("utf-8", errors="replace")
            except OSError:
                continue
            texts.append(raw)
            for line in raw.splitlines():
                with contextlib.suppress(ValueError, RecursionError):  # not JSON, or nested past json's depth
                    texts += [v for v in _strings(json.loads(line)) if v]
    return texts


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


_DOLLARS = re.compile(r"\$+")
_MATH_FENCE = re.compile(r"\$\$+[ \t]*")


def _math_inline(state, silent: bool) -> bool:
    """Math in text as micromark's math extension reads it (Streamlit's): a run of dollars, up to the next
    run of the same length, nothing escaped inside; not right after a dollar."""
    src, pos = state.src, state.pos
    if src[pos] != "$" or (pos > 0 and src[pos - 1] == "$"):
        return False
    size = len(_DOLLARS.match(src, pos).group())
    closer = next((m for m in _DOLLARS.finditer(src, pos + size) if len(m.group()) == size), None)
    if closer is None:
        return False
    if not silent:
        state.push("math_inline", "", 0).content = src[pos + size : closer.start()]
    state.pos = closer.end()
    return True


def _math_block(state, start: int, end: int, silent: bool) -> bool:
    """A ``$$`` fence (up to a line of as many dollars or more, or the end) as one block of math."""
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    first = state.src[state.bMarks[start] + state.tShift[start] : state.eMarks[start]]
    if not _MATH_FENCE.fullmatch(first):
        return False
    if silent:
        return True
    size, line = len(first.strip()), start + 1
    while line < end:
        text = state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]
        closes = _MATH_FENCE.fullmatch(text) and len(text.strip()) >= size
        if closes and state.sCount[line] - state.blkIndent < 4:
            break
        line += 1
    token = state.push("math_block", "", 0)
    token.content = state.getLines(start + 1, line, state.sCount[start], False)
    token.map = [start, line + 1]
    state.line = line + 1
    return True


def _math_html(_renderer, tokens, k: int, *_) -> str:
    return f"<code>{escapeHtml(tokens[k].content)}</code>"


def _reader():
    """CommonMark with tables, strikethrough, raw HTML (shown if any came through) and dollar math."""
    reader = markdown_it.MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    reader.inline.ruler.before("escape", "math_inline", _math_inline)
    alt = {"alt": ["paragraph", "reference", "blockquote", "list"]}
    reader.block.ruler.before("fence", "math_block", _math_block, alt)
    for kind in ("math_inline", "math_block"):  # drawn by KaTeX: text, never Markdown
        reader.add_render_rule(kind, _math_html)
    return reader


ALLOWED_TAGS = {
    "p", "br", "em", "strong", "s", "code", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li",
    "blockquote", "hr", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_TAG = re.compile(r"<\s*/?\s*([A-Za-z][A-Za-z0-9-]*)")
_GFM_LINK = re.compile(r"://|www\.|mailto:|xmpp:|[\w.+-]@[\w-]+\.[\w-]", re.I)


def _tokens(tokens):
    for token in tokens:
        yield token
        yield from _tokens(token.children or ())


def assert_inert(source: str) -> str:
    """``safe_markdown(source)`` read back: no link, image or HTML; text that GFM would not link either."""
    out = safe_markdown(source)
    reader = _reader()
    kinds = {t.type for t in _tokens(reader.parse(out))}
    assert not kinds & {"link_open", "image", "html_inline", "html_block"}, (source, out, kinds)
    texts = [t.content for t in _tokens(reader.parse(out)) if t.type == "text"]
    linked = [t for t in texts if _GFM_LINK.search(t)]
    assert not linked, (source, out, linked)  # an address outside a code span: GFM would make it a link
    tags = {m.group(1).lower() for m in _TAG.finditer(reader.render(out))}
    assert tags <= ALLOWED_TAGS, (source, out, tags - ALLOWED_TAGS)
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", out), out  # bidi controls are shown, not obeyed
    return out


@pytest.mark.parametrize("source", PAYLOADS)
def test_payloads_stay_inert(source: str) -> None:
    assert_inert(source)


def test_the_hostile_corpus_stays_inert(tmp_path: Path) -> None:
    corpus = _hostile_corpus(tmp_path)
    assert len(corpus) > 50
    for source in corpus:
        assert_inert(source)


def test_no_link_image_or_tag_survives_as_markup() -> None:
    out = assert_inert("![img](http://e.example/p.png) [t](http://e.example) <b>bold</b> <http://e.example>")
    assert not re.search(r"(?<!\\)(!\[|\]\(|<[A-Za-z/!?])", out.replace("`http://e.example/p.png)`", ""))
    html = _reader().render(out)
    assert "<img" not in html and "<a " not in html and "<b>" not in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html  # the tag is shown as text


def test_streamlit_directives_and_logo_stay_text() -> None:
    """Streamlit reads ``:name[label]{attributes}`` as its directives (colours, badges, ``:small``) and draws
    an image for ``:streamlit:``: model text gets neither."""
    out = assert_inert(":red[x] :small{a=1} ::leaf :::box :blue-badge[b] :streamlit: 10:30 | :---: |")
    assert not re.search(r"(?<!\\):[A-Za-z]", out), out
    assert ":streamlit:" not in out and "10:30" in out and ":---:" in out


def test_addresses_become_code_spans() -> None:
    out = assert_inert("see http://e.example/a?b=1 and www.e.example or me@e.example.")
    assert "`http://e.example/a?b=1`" in out and "`www.e.example`" in out and "`me@e.example.`" in out


@pytest.mark.parametrize(
    ("source", "kept"),
    [
        ("Energy $E = mc^2$ holds.", "$E = mc^2$"),
        ("Display $$\\int_0^1 x\\,dx$$ inline.", "$$\\int_0^1 x\\,dx$$"),
        ("$$\n\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}\n$$", "$$\n\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}\n$$"),
        ("So \\(a^2 + b^2\\) is", "$a^2 + b^2$"),
        ("\\[\n\\boxed{42}\n\\]", "$$\n\\boxed{42}\n$$"),
        ("\\[ x = \\sqrt[3]{8} \\]", "$$\n x = \\sqrt[3]{8} \n$$"),
        ("norm $|x| + \\|y\\|$", "$\\vert x\\vert  + \\Vert y\\Vert $"),
        ("a < b in $a<b$ and [c] in $[c]$", "$a<b$"),
    ],
)
def test_latex_is_kept_for_the_renderer(source: str, kept: str) -> None:
    out = assert_inert(source)
    assert kept in out, out


def test_latex_that_could_link_is_not_drawn() -> None:
    out = assert_inert("$\\href{http://e.example}{x}$ and $$\\url{http://e.example}$$")
    assert "\\$\\\\href" in out and "\\$\\$\\\\url" in out


def test_dollars_that_are_not_math_are_escaped() -> None:
    out = assert_inert("It costs $5, or $$ at most, and $ 7.")
    assert "$" not in out.replace("\\$", "")


def test_fenced_code_is_kept_as_written() -> None:
    code = "def f(x):\n    return '<b>[x](http://e.example)</b>' + `y`  # $z$"
    out = assert_inert(f"Here:\n\n```python\n{code}\n```\n\nDone.")
    assert f"```python\n{code}\n```" in out
    html = _reader().render(out)
    assert '<pre><code class="language-python">' in html
    assert "&lt;b&gt;[x](http://e.example)&lt;/b&gt;" in html


def test_a_fence_in_a_list_and_an_unclosed_fence_are_code() -> None:
    out = assert_inert("1. Step:\n    ```\n    x = [1](2)\n    ```\n2. Next")
    assert "\n```\nx = [1](2)\n```\n" in out
    out = assert_inert("Text\n~~~sh\nrm -rf <dir> [a](b)")
    assert out.endswith("```sh\nrm -rf <dir> [a](b)\n```\n")


def test_code_spans_are_kept_and_a_fence_longer_than_their_backticks_is_used() -> None:
    out = assert_inert("use `a <b> [c](d)` or ``x`y`` here")
    assert "`a <b> [c](d)`" in out and "``x`y``" in out
    assert code_span("a`b") == "``a`b``" and code_span("`a") == "`` `a ``" and code_span("x\ny") == "`x y`"


def test_formatting_still_renders() -> None:
    out = assert_inert("# Title\n\n**bold** _it_ ~~gone~~\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    html = _reader().render(out)
    for tag in ("<h1>", "<strong>", "<em>", "<s>", "<li>", "<table>", "<td>1</td>"):
        assert tag in html, html


def test_line_breaks_are_kept() -> None:
    html = _reader().render(assert_inert("first line\nsecond line\n\nnew paragraph"))
    assert "first line<br />\nsecond line" in html and "<p>new paragraph</p>" in html


def test_a_long_line_is_quick() -> None:
    text = "t1" * 200_000 + " a@" * 20_000 + " `" * 2_000 + " \\(" * 2_000
    assert len(safe_markdown(text)) > len(text)


WORDS = ["http", "www", "javascript:", "img", "a", "href", "mailto", "e.example", "```", "\\(", "$$"]
MARKUP = "<>[]()!`$\\|*_~#-:@./&;\n \t=\"'{}^"


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(WORDS),
            st.text(alphabet=MARKUP, min_size=1, max_size=6),
        ),
        max_size=40,
    )
)
def test_generated_markup_stays_inert(parts: list[str]) -> None:
    assert_inert("".join(parts))
