"""README.md and docs/*.md: every relative link and image leads somewhere, and the README stays short.

A link to a file must name one that exists (a folder counts); a link to ``file.md#anchor`` (or ``#anchor``
in the same file) must name a heading of that file, slugged as GitHub slugs it: lower case, punctuation
dropped, spaces to hyphens, ``-1``, ``-2``... for repeats. Links with a scheme (``https:``, ``mailto:``)
are not followed. Text in code (fenced blocks, inline spans) holds no links and no headings.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
README_MAX_LINES = 400
TEST_COMMAND = "bash tests/run.sh"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
# A code span may run over one line break, never over a blank line (a paragraph's end).
CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1", re.S)
# [text](target "title") and ![alt](target); the text may hold one level of brackets and line breaks.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
IMG_SRC = re.compile(r"<img\b[^>]*\bsrc=\"([^\"]+)\"", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def outside_fences(text: str) -> list[str]:
    """The lines of ``text``, those of fenced code blocks blanked (a ``# comment`` there is no heading)."""
    out: list[str] = []
    fence = ""
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            out.append("")
        elif m:
            fence = m.group(1)
            out.append("")
        else:
            out.append(line)
    return out


def prose(text: str) -> str:
    """The text with code blocks and inline code spans blanked (line breaks kept, so lines still count)."""
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), "\n".join(outside_fences(text)))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: its rendered words, lower case, punctuation dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file; a repeated heading gets -1, -2... as on GitHub."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in outside_fences(path.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link, image and reference definition outside code."""
    text = prose(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for pattern in (INLINE_LINK, REFERENCE, IMG_SRC):
        for m in pattern.finditer(text):
            found.append((text.count("\n", 0, m.start(1)) + 1, m.group(1)))
    return sorted(found)


def broken_links(path: Path) -> list[str]:
    """``file:line: target: why`` for every relative link of ``path`` that leads nowhere."""
    problems: list[str] = []
    cache: dict[Path, set[str]] = {}
    for line, target in links(path):
        if SCHEME.match(target):
            continue
        where, _, anchor = target.partition("#")
        dest = (path.parent / unquote(where)).resolve() if where else path.resolve()
        why = ""
        if not dest.exists():
            why = "no such file"
        elif anchor and dest.suffix == ".md":
            if dest not in cache:
                cache[dest] = anchors(dest)
            if unquote(anchor).lower() not in cache[dest]:
                why = f"no heading with anchor #{anchor} in {dest.name}"
        if why:
            problems.append(f"{path.name}:{line}: {target}: {why}")
    return problems


# -- the repository's own Markdown ------------------------------------------------------------------------


def too_long(path: Path) -> str:
    """Why ``path`` is too long for a README, or ""."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if lines <= README_MAX_LINES:
        return ""
    return f"{path.name} has {lines} lines, more than {README_MAX_LINES}: move detail into docs/"


def test_the_readme_is_read_in_five_minutes() -> None:
    assert not too_long(README), too_long(README)


def test_every_relative_link_and_image_resolves() -> None:
    problems = [p for f in markdown_files() for p in broken_links(f)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_checker_sees_the_links_there_are() -> None:
    """Guards against a pattern that silently matches nothing: the README links its docs and pictures."""
    targets = {t for _, t in links(README)}
    assert any(t.startswith("docs/screenshots/") and t.endswith(".png") for t in targets)
    assert any("#" in t and t.startswith("docs/") for t in targets)


def test_every_doc_is_linked_from_the_readme() -> None:
    targets = {t.partition("#")[0] for _, t in links(README)}
    unlinked = [f"docs/{d.name}" for d in sorted(DOCS.glob("*.md")) if f"docs/{d.name}" not in targets]
    assert not unlinked, f"not linked from README.md: {unlinked}"


def test_ci_runs_the_readmes_test_command() -> None:
    assert f"\n{TEST_COMMAND} " in README.read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    commands = [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert TEST_COMMAND in commands


# -- the checker, on Markdown made to break ---------------------------------------------------------------


def test_github_slugs() -> None:
    assert slug("Logs of other trainers, read as they are") == "logs-of-other-trainers-read-as-they-are"
    assert slug("`--no-token`: behind your own login") == "--no-token-behind-your-own-login"
    assert slug("TRL's reward") == "trls-reward"
    assert slug("What you see: [Overview](x.md)") == "what-you-see-overview"
    assert slug("snake_case & Ünïcode") == "snake_case--ünïcode"


def test_a_broken_link_fails(tmp_path: Path) -> None:
    (tmp_path / "pic.png").write_bytes(b"\x89PNG")
    (tmp_path / "sub").mkdir()
    (tmp_path / "other.md").write_text("# Other page\n\n## Part: `one`\n\n## Part: `one`\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[fine](other.md) [fine](other.md#other-page) [fine](other.md#part-one-1) [fine](sub/)\n"
        "![fine](pic.png) [fine](#page) [fine](https://example.com/nowhere.md)\n"
        "[gone](missing.md)\n"
        "![gone](missing.png)\n"
        "[bad anchor](other.md#part-two)\n"
        "[bad anchor here](#nowhere)\n"
        "[a link over\ntwo lines](gone-too.md)\n"
        '<img src="gone.png" alt="">\n'
        "[ref]: missing-ref.md\n\n"
        "`[in code](not-a-link.md)`\n\n"
        "```\n# not a heading\n[in a fence](not-a-link.md)\n```\n",
        encoding="utf-8",
    )
    problems = broken_links(page)
    assert [p.split(": ", 1)[0] for p in problems] == [
        "page.md:5",
        "page.md:6",
        "page.md:7",
        "page.md:8",
        "page.md:10",
        "page.md:11",
        "page.md:12",
    ]
    assert "missing.md: no such file" in problems[0]
    assert "other.md#part-two: no heading" in problems[2]
    assert "#nowhere: no heading with anchor #nowhere in page.md" in problems[3]
    assert "gone-too.md" in problems[4]
    assert not any("not-a-link" in p or "not-a-heading" in p for p in problems)
    assert "not-a-heading" not in anchors(page)


def test_a_long_readme_fails(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("line\n" * README_MAX_LINES, encoding="utf-8")
    assert not too_long(readme)
    readme.write_text("line\n" * (README_MAX_LINES + 1), encoding="utf-8")
    assert "401 lines" in too_long(readme)
