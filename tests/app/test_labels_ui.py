"""Labels from the pages: a tag and a note put on a sample from the Sample page, several rows tagged at once
from the step browser, the step browser filtered by tag and by the failure signals. Labels land in the labels
file of the configuration (never beside the logs); tag and note text is shown as text; a refused tag is a
message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rl_board import config
from rl_board.rollouts import planted
from rl_board.rollouts.labels import MAX_NOTE, LabelStore
from tests.helpers.apptest import assert_clean, open_page, table, texts

HOSTILE_TAG = "![x](https:/evil.example/t.png) <b>hack</b> *"


@pytest.fixture
def root(tmp_path, serve) -> Path:
    root = tmp_path / "served"
    planted.write(root / "run", steps=4, samples=12, seed=4, template=0.4, loops=0.4, mixed=0.4)
    return serve(root)


def labels() -> LabelStore:
    return LabelStore(config.settings().labels)


def said(at) -> list[str]:
    return [str(e.value) for e in (*at.success, *at.error)]


def written_response(root: Path, step: int, sample: int) -> str:
    rows = [json.loads(x) for x in (root / "run" / "rollout_data_rank_0.jsonl").read_text().splitlines()]
    return [x for x in rows if x["step"] == step][sample]["response"]


def tick(at, rows: list[int]) -> None:
    """Tick rows of the step browser's table in tagging mode (as the browser sends a multi-row selection)."""
    [key] = [d.key for d in at.dataframe if (d.key or "").startswith("sample_table_tagging")]
    at.session_state[key] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    at.run()


def test_tag_and_note_a_sample_from_the_sample_page(root, own_labels_file):
    at = open_page("sample", run="run", step="2", sample="5")
    assert_clean(at)
    assert any(t.startswith("**Labels** · none yet") for t in texts(at.markdown))
    assert "sample_label_tag" not in [w.key for w in at.text_input]  # no inputs until asked for
    at.toggle(key="sample_label_open").set_value(True).run()  # the inputs, drawn only when asked for
    at.button_group(key="sample_label_pick").set_value("reward hack").run()  # a suggestion clicked
    assert at.text_input(key="sample_label_tag").value == "reward hack"
    at.text_area(key="sample_label_note").input("says <b>great</b> [x](https:/evil.example)").run()
    at.button(key="label_add").click().run()
    assert_clean(at)
    assert said(at) == ["Tagged 1 sample\\(s\\) “reward hack”\\."]
    [label] = labels().of_run(str(root / "run"))
    assert (label.step, label.tag, label.note) == (
        2,
        "reward hack",
        "says <b>great</b> [x](https:/evil.example)",
    )
    assert own_labels_file.exists() and not list((root / "run").glob("*.sqlite"))  # the config's file only
    assert ":material/label: **reward hack**" in texts(at.markdown)
    assert "says \\<b\\>great\\</b\\> \\[x\\]\\(https\\:/evil\\.example\\)" in texts(at.caption)  # as text
    assert (
        at.text_input(key="sample_label_tag").value == ""
        and at.text_area(key="sample_label_note").value == ""
    )
    # the label sits on the sample whose text was written at step 2, index 5
    found = labels().of_sample(
        run=str(root / "run"), step=2, file=label.file, line=label.line, sample_digest=label.digest
    )
    line = (root / "run" / label.file).read_text().splitlines()[label.line - 1]  # lines count from 1
    assert found and json.loads(line)["response"] == written_response(root, 2, 5)

    at.button(key="label_remove_0").click().run()
    assert_clean(at)
    assert labels().of_run(str(root / "run")) == []
    assert any(t.startswith("**Labels** · none yet") for t in texts(at.markdown))


def test_a_refused_tag_or_note_is_a_message_not_a_traceback(root):
    at = open_page("sample", run="run", step="1", sample="0")
    at.toggle(key="sample_label_open").set_value(True).run()
    at.button(key="label_add").click().run()  # no tag chosen
    assert_clean(at)
    assert said(at) == ["Not saved\\: a tag needs at least one character\\."]
    at.text_input(key="sample_label_tag").input("x" * 65).run()
    at.button(key="label_add").click().run()
    assert_clean(at)
    assert said(at) == ["Not saved\\: a tag is at most 64 characters \\(this one has 65\\)\\."]
    at.text_input(key="sample_label_tag").input("good").run()
    at.text_area(key="sample_label_note").input("n" * (MAX_NOTE + 1)).run()
    at.button(key="label_add").click().run()
    assert_clean(at)
    assert said(at) == [
        f"Not saved\\: a note is at most {MAX_NOTE} characters \\(this one has {MAX_NOTE + 1}\\)\\."
    ]
    assert labels().of_run(str(root / "run")) == []


def test_a_typed_tag_is_text_everywhere(root):
    at = open_page("sample", run="run", step="0", sample="3")
    at.toggle(key="sample_label_open").set_value(True).run()
    at.text_input(key="sample_label_tag").input(HOSTILE_TAG).run()
    at.button(key="label_add").click().run()
    assert_clean(at)
    shown = [t for t in texts(at.markdown) if t.startswith(":material/label:")]
    assert shown == [
        ":material/label: **\\!\\[x\\]\\(https\\:/evil\\.example/t\\.png\\) \\<b\\>hack\\</b\\> \\***"
    ]
    at = open_page("steps", run="run", step="0", tag=HOSTILE_TAG)
    assert_clean(at)
    frame = table(at)
    assert frame["sample"].tolist() == [3] and frame["tags"].tolist() == [HOSTILE_TAG]  # a cell: plain text
    assert HOSTILE_TAG in at.selectbox(key="w.tag").options


def test_tag_ticked_rows_in_the_step_browser_then_filter_by_tag(root):
    at = open_page("steps", run="run", step="3")
    assert_clean(at)
    assert "tags" in table(at).columns and (table(at)["tags"] == "").all()
    at.toggle(key="w.tag_rows").set_value(True).run()
    assert at.button(key="rows_label_add").disabled  # nothing ticked yet
    tick(at, [1, 4, 6])
    at.text_input(key="rows_label_tag").input("loop").run()
    at.text_area(key="rows_label_note").input("repeats itself").run()
    at.button(key="rows_label_add").click().run()
    assert_clean(at)
    assert said(at) == ["Tagged 3 sample\\(s\\) “loop”\\."]
    frame = table(at)
    assert frame.loc[frame["tags"] != "", "sample"].tolist() == [1, 4, 6] and set(frame["tags"]) == {
        "",
        "loop",
    }
    stored = labels().of_run(str(root / "run"))
    assert sorted((x.step, x.note) for x in stored) == [(3, "repeats itself")] * 3

    at.selectbox(key="w.tag").set_value("loop").run()  # the tag filter
    assert_clean(at)
    assert at.query_params["tag"] in ("loop", ["loop"])
    assert table(at)["sample"].tolist() == [1, 4, 6]
    assert any(t.startswith("**3** of 12 samples in step 3 match the filters") for t in texts(at.markdown))
    at = open_page("steps", run="run", step="2", tag="loop")  # from a link, at a step without the tag
    assert any("No sample matches" in str(i.value) for i in at.info)
    at = open_page("steps", run="run", step="2", tag="loop", all_steps="1")
    assert set(zip(table(at)["step"], table(at)["sample"], strict=True)) == {(3, 1), (3, 4), (3, 6)}


def test_remove_a_tag_from_ticked_rows(root):
    at = open_page("steps", run="run", step="1")
    at.toggle(key="w.tag_rows").set_value(True).run()
    tick(at, [0, 2])
    at.text_input(key="rows_label_tag").input("good").run()
    at.button(key="rows_label_add").click().run()
    tick(at, [2, 5])
    at.button(key="rows_label_remove").click().run()
    assert_clean(at)
    assert said(at) == ["Removed “good” from 1 of 2 sample\\(s\\)\\."]
    assert [(x.step, x.tag) for x in labels().of_run(str(root / "run"))] == [(1, "good")]
    at.slider(key="w.step").set_value(2).run()  # other samples shown: no tick carries over to them
    assert (
        at.button(key="rows_label_add").disabled and at.button(key="rows_label_add").label == "Tag 0 row(s)"
    )
    at.toggle(key="w.tag_rows").set_value(False).run()  # a click opens a sample again
    assert [d.key for d in at.dataframe if d.key] == ["sample_table"]


def test_signal_filters_of_the_step_browser(root):
    rows = [json.loads(x) for x in (root / "run" / "rollout_data_rank_0.jsonl").read_text().splitlines()]
    step3 = [x for x in rows if x["step"] == 3]
    at = open_page("steps", run="run", step="3", scripts="han")
    assert_clean(at)
    want = [k for k, x in enumerate(step3) if any("\u4e00" <= c <= "\u9fff" for c in x["response"])]
    assert want and table(at)["sample"].tolist() == want
    assert set(table(at)["scripts"]) == {"Latin+Han"}
    at = open_page("steps", run="run", step="3", repetition="0.5:", sort="repetition", descending="1")
    loops = table(at)
    assert len(loops) and (loops["repetition"] >= 0.5).all()
    assert at.number_input(key="w.repetition.lo").value == 0.5
    phrase_loops = [
        k for k, x in enumerate(step3) if len(x["response"].split()) > 100
    ]  # 20 words + 40 × a phrase
    assert sorted(loops["sample"]) == phrase_loops
    at = open_page("steps", run="run", step="3", template="1")
    great = [k for k, x in enumerate(step3) if x["response"].startswith("Great question!")]
    assert table(at)["sample"].tolist() == great and set(table(at)["template"]) == {"T1"}
    at.button(key="clear_filters").click().run()
    assert len(table(at)) == 12 and "template" not in at.query_params and "scripts" not in at.query_params
    at = open_page("steps", run="run", step="3", template="0")  # no family has number 0: a message, no filter
    assert_clean(at)
    assert len(table(at)) == 12 and any("numbered from 1" in str(w.value) for w in at.warning)
