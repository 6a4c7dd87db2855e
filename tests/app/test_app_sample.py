"""Sample view: texts as text, scores, token chips, heatmap, mismatch notice, navigation."""

from __future__ import annotations

from rl_board.formats import fields as F
from rl_board.rollouts.demo import EOD, SYSTEM
from tests.helpers.apptest import assert_clean, figures, heat_grid, interactive, plain_texts, texts


def _mismatched(store) -> tuple[int, int]:
    """(step, index) of a sample whose trailing <EOD> token has no log-prob."""
    for step in store.steps:
        frame = store.samples(step=step, columns=["length_mismatch"])
        hits = frame.index[frame["length_mismatch"]]
        if len(hits):
            return step, int(frame["sample"].iloc[hits[0]])
    raise AssertionError("demo run has no mismatched sample")


def test_sample_page_shows_texts_scores_and_tokens(open_app, store_of):
    at = open_app("sample", run="ppo", step="2", sample="1")
    assert_clean(at)
    detail = store_of("ppo").sample(step=2, index=1)
    assert any("Step 2 · sample 1" in t for t in texts(at.markdown))
    codes = plain_texts(at)
    assert detail.fields["response"].replace("<PAD>", "").replace(EOD, "") in codes
    assert detail.fields["ground_truth"] in codes
    prompt = detail.fields["prompt"]
    assert prompt.split("<endofsystem>", 1)[1] in codes and SYSTEM not in " ".join(codes)
    labels = [m.label for m in at.metric]
    assert {"Reward", "Ref reward", "Reward gap"} <= set(labels)
    chips = " ".join(str(h.proto.body) for h in at.get("html"))
    assert 'class="rlb-chip"' in chips
    grid = heat_grid(at)  # drawn as cells with the page: one row per metric, hover for position and value
    assert all(f'title="{F.label(m, F.TOKEN)}"' in grid for m in ("kl", "log_ratio", "logp"))
    assert grid.count('title="#') == grid.count("<i ") - grid.count("<i></i>")
    assert "<i></i>" not in grid
    interactive(at)  # the Plotly heatmap, on request
    assert_clean(at)
    heat = next(spec for title, spec in figures(at).items() if title.startswith("Token × metric"))
    assert {t["name"] for t in heat["data"]} >= {"kl", "log_ratio", "logp"}
    assert not heat_grid(at)
    tokens = next(f.value for f in at.dataframe if {"position", "token", "logp"} <= set(f.value.columns))
    visible = detail.tokens[~detail.tokens["token"].isin(["<PAD>", EOD])]
    assert list(tokens["position"]) == list(visible.index)
    top = next(f.value for f in at.dataframe if list(f.value.columns) == ["position", "token", "kl"])
    assert top["kl"].iloc[0] == visible["kl"].max()


def test_hiding_can_be_switched_off(open_app, store_of):
    at = open_app("sample", run="ppo", step="2", sample="1")
    at.sidebar.toggle(key="hide_system").set_value(False).run()
    at.sidebar.toggle(key="hide_pads").set_value(False).run()
    assert_clean(at)
    detail = store_of("ppo").sample(step=2, index=1)
    assert detail.fields["prompt"] in plain_texts(at)


def test_mismatch_notice(open_app, store_of):
    step, index = _mismatched(store_of("ppo"))
    at = open_app("sample", run="ppo", step=str(step), sample=str(index))
    assert_clean(at)
    assert any("log-probs" in t and "tokens" in t for t in texts(at.warning))


def test_token_metric_from_link_and_chooser(open_app):
    at = open_app("sample", run="ppo", step="1", sample="0", token_metric="logp")
    assert_clean(at)
    assert at.button_group(key="w.token_metric").value == "logp"
    assert any("Top tokens by log-prob" in t for t in texts(at.markdown))


def test_next_sample_crosses_into_next_step(open_app):
    at = open_app("sample", run="ppo", step="1", sample="7")
    at.button(key="sample_next").click().run()
    assert_clean(at)
    assert any("Step 2 · sample 0" in t for t in texts(at.markdown))
    at.button(key="sample_prev").click().run()
    assert any("Step 1 · sample 7" in t for t in texts(at.markdown))


def test_hostile_text_is_shown_as_text(open_app):
    at = open_app("sample", run="hostile", step="0", sample="0")
    assert_clean(at)
    assert "<script>alert(1)</script><img src=x onerror=alert(2)>" in plain_texts(at)
    chips = " ".join(str(h.proto.body) for h in at.get("html"))
    assert "<script>" not in chips and "&lt;script&gt;" in chips
    assert 'onmouseover="' not in chips
