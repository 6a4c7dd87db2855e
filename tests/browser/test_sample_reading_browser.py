"""The Sample page as a reading surface, in a real browser at 1500×1000: a GRPO-like run whose answer is about
1,500 tokens (a ``<think>`` block, Markdown, LaTeX, code and a final ``\\boxed{42}`` line).

The response takes most of the main column, reads without a small inner scroll box, its thinking folds and
its final line (and \\boxed{}) shows at the top; the rendered view (Markdown, LaTeX, code) is offered and
keeps model text inert. A run without reference response or ground truth gives them no space. Screenshots
of each."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.helpers.apptest import APP
from tests.helpers.markdown_payloads import PAYLOADS
from tests.helpers.screens import REPO, save_screenshot
from tests.helpers.served import admit, start_app_with_token
from tests.helpers.streamlit_browser import StreamlitRuns, set_toggle, stop_streamlit

pytestmark = pytest.mark.browser
VIEWPORT = {"width": 1500, "height": 1000}
PROMPT = "What is $6 \\times 7$? Think step by step, then put the final answer in \\boxed{}."
THINKING = (
    "Let me work out $6 \\times 7$ carefully.",
    "Six sevens: $7 + 7 + 7 + 7 + 7 + 7$.",
    "Pairs first: $7 + 7 = 14$, and three pairs give $3 \\times 14 = 42$.",
    "Check it another way: $6 \\times 7 = 6 \\times 5 + 6 \\times 2 = 30 + 12 = 42$.",
    "Wait, maybe the question means something else; re-read it.",
    "No, it is the plain product, so the sum of the pairs stands.",
)
ANSWER = """## Solution

We need $6 \\times 7$. Write it as a sum of **six sevens**:

1. $7 + 7 = 14$ (one pair),
2. three pairs: $3 \\times 14 = 42$.

The same in code:

```python
def product(a: int, b: int) -> int:
    return sum(b for _ in range(a))  # 6 sevens
```

$$
6 \\times 7 = \\sum_{k=1}^{6} 7 = 42
$$

Final answer: \\boxed{42}"""
HOSTILE = (
    '<img src=x onerror="window.__xss=1"> [click](javascript:window.__xss=2) '
    "![pixel](http://evil.example/pixel.png) <http://evil.example/a> www.evil.example/b "
    "$\\href{javascript:window.__xss=3}{x}$ <script>window.__xss=4</script>\n\nThe answer is 4.\n\n"
) + "\n\n".join(sorted(PAYLOADS, key=lambda p: p.startswith("```")))  # an unclosed fence last


def _tokens(text: str) -> list[str]:
    """Word-sized tokens whose concatenation is ``text``."""
    return re.findall(r"\s*\S+|\s+", text)


def long_response() -> str:
    """About 1,500 tokens: a long <think> block, then the Markdown answer ending with \\boxed{42}."""
    thinking = "\n\n".join(THINKING[k % len(THINKING)] for k in range(120))
    return f"<think>\n{thinking}\n</think>\n\n{ANSWER}"


def _record(step: int, prompt: str, response: str, reward: float, **extra: object) -> dict:
    tokens = _tokens(response)
    return {
        "step": step,
        "prompt": prompt,
        "response": response,
        "reward": reward,
        "response_tokens": tokens,
        "logprobs": [-0.1 - 0.01 * (k % 7) for k in range(len(tokens))],
        "ref_logprobs": [-0.12 - 0.01 * (k % 5) for k in range(len(tokens))],
        **extra,
    }


def write_runs(root: Path) -> None:
    """``grpo``: a group of four answers, the first the long one (ground truth; the last also has a reference
    response, the third is hostile text); ``plain``: no reference response and no ground truth."""
    grpo = root / "grpo"
    grpo.mkdir(parents=True)
    group = {"group": "s0-p0", "ground_truth": "42"}
    lines = [
        _record(0, PROMPT, long_response(), 1.2, advantage=1.1, **group),
        _record(0, PROMPT, "<think>\n6*7=42\n</think>\nIt is \\boxed{42}.", 1.2, advantage=1.1, **group),
        _record(0, PROMPT, HOSTILE, 0.0, advantage=-0.9, **group),
        _record(0, PROMPT, "42", 0.2, advantage=-0.5, ref_response="6 times 7 is \\boxed{42}.", **group),
    ]
    (grpo / "rollouts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    plain = root / "plain"
    plain.mkdir()
    (plain / "rollouts.jsonl").write_text(json.dumps(_record(0, PROMPT, long_response(), 1.0)) + "\n")


@pytest.fixture(scope="module")
def reading_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("reading") / "logs"
    write_runs(root)
    logs = tmp_path_factory.mktemp("reading-server")
    srv = start_app_with_token(
        logs / "streamlit.log",
        APP,
        cwd=REPO,
        env_extra={
            "RL_BOARD_ROOTS": str(root),
            "RL_BOARD_CACHE_DIR": str(logs / "cache"),
            "RL_BOARD_LABELS": str(logs / "labels.sqlite"),
        },
    )
    yield srv
    stop_streamlit(srv.proc)


@pytest.fixture
def tab(chromium_browser, reading_server):
    context = chromium_browser.new_context(viewport=VIEWPORT)
    admit(context, reading_server)
    page = context.new_page()
    page.dialogs, page.hosts = [], set()
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: page.hosts.add(r.url.split("/")[2] if "://" in r.url else r.url[:5]))
    yield page, StreamlitRuns(page)
    context.close()


# The response's box (its heading, final answer, thinking and text) against the main column's content width;
# the height of any box inside it that scrolls. (Before this layout, the same measure on the bordered box of
# the plain text holding the answer gave 248 of 1040 px, a scroll box 358 px high.)
_BOXES = """() => {
    const column = document.querySelector('[data-testid="stMainBlockContainer"]');
    const style = getComputedStyle(column);
    const main = column.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const box = document.querySelector('.st-key-sample_response');
    const r = box.getBoundingClientRect();
    const scroller = [box, ...box.querySelectorAll('*')].find(
        e => e.scrollHeight > e.clientHeight + 4 && getComputedStyle(e).overflowY !== 'visible');
    return {main: main, box: r.width, top: r.top, scroll: scroller ? scroller.clientHeight : null};
}"""


def response_box(page) -> dict:
    return page.evaluate(_BOXES)


def test_the_long_answer_takes_the_main_column(tab, reading_server):
    page, runs = tab
    main = page.get_by_test_id("stMain")
    runs.goto(f"{reading_server.url}/sample?run=grpo&step=0&sample=0")
    expect(main.get_by_text("Step 0 · sample 0", exact=False)).to_be_visible()
    sizes = response_box(page)
    ratio = sizes["box"] / sizes["main"]
    print(f"response box {sizes['box']:.0f} of {sizes['main']:.0f} px ({ratio:.1%})", sizes)
    assert ratio >= 0.6, sizes
    # no small inner scroll box: the answer reads at its whole height, or in one most of the screen high
    assert sizes["scroll"] is None or sizes["scroll"] >= 0.7 * VIEWPORT["height"], sizes

    box = page.locator(".st-key-sample_response")
    expect(box.get_by_text("Final answer", exact=False).first).to_be_visible()
    expect(box.locator(".st-key-response_final").get_by_text("42", exact=True)).to_be_visible()
    fold = box.get_by_test_id("stExpander").filter(has_text=re.compile(r"Thinking · \d+ characters"))
    expect(fold).to_be_visible()
    thought = fold.get_by_text("Let me work out", exact=False).first
    expect(thought).to_have_count(0)  # folded, and drawn only when opened: the answer first
    expect(box.get_by_text("Write it as a sum of", exact=False).first).to_be_visible()
    expect(main.get_by_text("not in this log", exact=False)).to_have_count(0)
    prompt = main.get_by_test_id("stText").filter(has_text="Think step by step").first
    assert prompt.bounding_box()["y"] < sizes["top"]  # the prompt above the response, in a compact box
    expect(main.get_by_text("Ground truth", exact=False).first).to_be_visible()
    save_screenshot(page, "sample-reading.png")

    with runs.expect_rerun():  # the thinking, opened: drawn then
        fold.locator("summary").click()
    expect(thought).to_be_visible()
    assert response_box(page)["box"] / sizes["main"] >= 0.6
    save_screenshot(page, "sample-reading-thinking.png")
    with runs.expect_rerun():
        fold.locator("summary").click()
    expect(thought).to_have_count(0)

    # the rendered view: headings, LaTeX and code drawn; the heatmap and chips still there
    set_toggle(runs, main.get_by_test_id("stCheckbox").filter(has_text="Rendered view"), True)
    assert "rendered=1" in page.url
    expect(box.locator("h2").filter(has_text="Solution")).to_be_visible()
    expect(box.locator(".katex").first).to_be_visible()
    expect(box.locator("pre code").filter(has_text="def product")).to_be_visible()
    assert box.locator("a[href], img").count() == 0
    assert response_box(page)["box"] / sizes["main"] >= 0.6
    expect(page.locator(".rlb-chip").first).to_be_attached()
    save_screenshot(page, "sample-reading-rendered.png")


def test_hostile_text_stays_inert_in_the_rendered_view(tab, reading_server):
    page, runs = tab
    main = page.get_by_test_id("stMain")
    runs.goto(f"{reading_server.url}/sample?run=grpo&step=0&sample=2&rendered=1")
    box = page.locator(".st-key-sample_response")
    expect(box.get_by_text("The answer is 4.", exact=False).first).to_be_visible()
    expect(box.get_by_text("javascript:window.__xss=2", exact=False).first).to_be_visible()  # shown, as text
    page.wait_for_timeout(300)
    injected = main.evaluate(  # the page's own heading anchors (#tokens) aside
        """m => [...m.querySelectorAll(
                   'a[href]:not([href^="#"]), img, script, iframe, svg[onload], [onerror], [onmouseover]')]
                 .map(e => e.outerHTML.slice(0, 200))"""
    )
    assert injected == []
    assert box.locator("a").count() == 0
    expect(box.locator(".katex").first).to_be_attached()  # the payloads' harmless LaTeX is drawn
    assert page.dialogs == [] and page.evaluate("window.__xss") is None
    assert all(host.startswith("127.0.0.1") or host in ("data:", "blob:") for host in page.hosts), page.hosts
    save_screenshot(page, "sample-reading-hostile.png")


def test_a_run_without_reference_or_ground_truth_gives_them_no_space(tab, reading_server):
    page, runs = tab
    main = page.get_by_test_id("stMain")
    runs.goto(f"{reading_server.url}/sample?run=plain&step=0&sample=0")
    expect(main.get_by_text("Step 0 · sample 0", exact=False)).to_be_visible()
    print("plain", response_box(page))
    expect(main.get_by_text("not in this log", exact=False)).to_have_count(0)
    expect(main.get_by_text("Ground truth", exact=True)).to_have_count(0)
    expect(main.get_by_text("Reference response", exact=True)).to_have_count(0)
    sizes = response_box(page)
    assert sizes["box"] / sizes["main"] >= 0.9, sizes  # the whole column: nothing beside it
    save_screenshot(page, "sample-reading-plain.png")
