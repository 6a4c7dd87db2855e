"""Runs on object storage, end to end against a real S3-compatible server (moto) on 127.0.0.1.

The CLI runs as a subprocess with only the standard AWS environment
(``AWS_ENDPOINT_URL`` pointing at the server, through a proxy that counts the
bytes the server sends back). Nothing of the filesystem layer is mocked.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rl_board import config
from rl_board.errors import RLBoardError
from rl_board.sources import remote
from tests.helpers import s3

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "rollout_samples" / "grpo_math"


@pytest.fixture(scope="module")
def server():
    with s3.s3_server() as endpoint:
        port = int(endpoint.rsplit(":", 1)[1])
        proxy = s3.CountingProxy(port)
        yield endpoint, proxy
        proxy.close()


@pytest.fixture
def bucket_run(server, tmp_path):
    """A copy of the GRPO sample run in a fresh bucket; returns (url, local copy, env, proxy)."""
    endpoint, proxy = server
    local = tmp_path / "grpo_math"
    shutil.copytree(SAMPLES, local)
    url = f"s3://logs-{tmp_path.name.lower().replace('_', '-')[-40:]}/team/grpo_math"
    s3.upload(endpoint, local, url)
    return url, local, s3.s3_env(proxy.url), proxy


def summary(target: str, env: dict, cache: Path) -> dict:
    proc = s3.run_cli(["summary", target, "--json", "--cache-dir", str(cache)], env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def same_run(a: dict, b: dict) -> None:
    assert a["samples"] == b["samples"] and a["steps"] == b["steps"]
    assert a["samples_per_step"] == b["samples_per_step"]
    for x, y in zip(a["step_stats"], b["step_stats"], strict=True):
        assert x["step"] == y["step"] and math.isclose(x["reward_mean"], y["reward_mean"], rel_tol=1e-12)


def test_summary_of_a_bucket_equals_the_local_copy(bucket_run, tmp_path):
    url, local, env, _ = bucket_run
    from_s3 = summary(url, env, tmp_path / "cache")
    same_run(from_s3, summary(str(local), {}, tmp_path / "cache2"))
    assert from_s3["run"] == url
    assert from_s3["remote"]["fetched_files"] == 2  # the rollout file and metrics.jsonl


def test_reopen_fetches_nothing_and_growth_fetches_only_the_new_bytes(bucket_run, tmp_path, server):
    url, local, env, proxy = bucket_run
    endpoint, _ = server
    cache = tmp_path / "cache"
    first = summary(url, env, cache)
    size = (local / "rollout_data_rank_0.jsonl").stat().st_size

    proxy.reset()
    again = summary(url, env, cache)
    assert again["remote"]["fetched_bytes"] == 0 and again["from_cache"]
    assert proxy.received < 16_000, "a reopen costs one listing, never the objects"

    data = (local / "rollout_data_rank_0.jsonl").read_bytes()
    extra = b"".join(
        line.replace(b'"step": 9', b'"step": 10')
        for line in data.splitlines(keepends=True)
        if b'"step": 9' in line
    )
    assert extra
    s3.put_bytes(endpoint, f"{url}/rollout_data_rank_0.jsonl", data + extra)
    proxy.reset()
    grown = summary(url, env, cache)
    assert grown["remote"]["appended_bytes"] == len(extra)
    checked = sum(end - start for start, end in remote.check_windows(size))
    assert (
        checked
        <= 2 * config.sizes().growth_check_bytes + remote.CHECK_BETWEEN * config.sizes().growth_window_bytes
    )
    assert grown["remote"]["fetched_bytes"] == len(extra) + checked
    # Counted on the wire: the new bytes, the check windows, the listing and HTTP headers; not the object.
    assert len(extra) + checked <= proxy.received < len(extra) + checked + 32_000 < size
    assert grown["samples"] == first["samples"] + extra.count(b"\n")
    assert grown["samples_per_step"]["10"] == first["samples_per_step"]["9"]
    local.joinpath("rollout_data_rank_0.jsonl").write_bytes(data + extra)
    same_run(grown, summary(str(local), {}, tmp_path / "cache2"))


def test_a_rewritten_object_is_fetched_again(bucket_run, tmp_path, server):
    url, local, env, _ = bucket_run
    endpoint, _ = server
    cache = tmp_path / "cache"
    summary(url, env, cache)
    data = (local / "rollout_data_rank_0.jsonl").read_bytes()
    first_end = data.index(b"\n") + 1
    first = json.loads(data[:first_end])
    first["reward"] = -5.0
    # Longer and rewritten in its first line (inside a check window): not an append, so fetched whole.
    changed = json.dumps(first).encode() + b"\n" + data[first_end:] + b"\n"
    s3.put_bytes(endpoint, f"{url}/rollout_data_rank_0.jsonl", changed)
    after = summary(url, env, cache)
    assert after["remote"]["appended_bytes"] == 0 and after["remote"]["fetched_bytes"] >= len(changed)
    local.joinpath("rollout_data_rank_0.jsonl").write_bytes(changed)
    same_run(after, summary(str(local), {}, tmp_path / "cache2"))
    shorter = data[first_end:]  # shorter: fetched whole, whatever the windows say
    s3.put_bytes(endpoint, f"{url}/rollout_data_rank_0.jsonl", shorter)
    local.joinpath("rollout_data_rank_0.jsonl").write_bytes(shorter)
    same_run(summary(url, env, cache), summary(str(local), {}, tmp_path / "cache2"))


def test_a_deleted_object_leaves_the_mirror(bucket_run, tmp_path, server):
    url, _, env, _ = bucket_run
    endpoint, _ = server
    cache = tmp_path / "cache"
    s3.put_bytes(
        endpoint, f"{url}/extra/rollout_more.jsonl", b'{"step": 1, "prompt": "p", "response": "r"}\n'
    )
    summary(url, env, cache)
    mirrored = remote.local_path(url, cache) / "extra" / "rollout_more.jsonl"
    assert mirrored.is_file()
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=endpoint, key="testing", secret="testing")
    fs.rm(f"{url}/extra/rollout_more.jsonl".removeprefix("s3://"))
    assert summary(url, env, cache)["remote"]["removed_files"] == 1
    assert not mirrored.exists()


def test_only_the_prefix_is_listed(bucket_run, tmp_path, server):
    url, _, env, _ = bucket_run
    endpoint, _ = server
    s3.put_bytes(
        endpoint, url + "_private/secret.jsonl", b'{"step": 0, "prompt": "x", "response": "secret"}\n'
    )
    summary(url, env, tmp_path / "cache")
    base = remote.local_path(url, tmp_path / "cache")
    assert not (base.parent / "grpo_math_private").exists()
    assert all("secret" not in p.name for p in base.rglob("*"))


def test_dot_dot_is_refused_before_any_request():
    for bad in ("s3://bucket/../other", "s3://bucket/runs/../../x", "s3://", "s3://bucket/./x"):
        with pytest.raises(RLBoardError):
            remote.split(bad)
    assert remote.split("s3://bucket//runs/a/") == ("s3", "bucket/runs/a")


def test_export_to_parquet_then_duckdb_and_summary_agree(bucket_run, tmp_path):
    import duckdb

    url, _, env, _ = bucket_run
    cache = tmp_path / "cache"
    original = summary(url, env, cache)
    out = tmp_path / "dataset"
    proc = s3.run_cli(["export", url, str(out), "--json", "--cache-dir", str(cache)], env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["_rl_board", *(f"step={s}" for s in sorted(original["steps"], key=str))]
    count = duckdb.sql(f"select count(*) from read_parquet('{out}/**/*.parquet', hive_partitioning=true)")
    assert count.fetchall()[0][0] == original["samples"]
    by_step = dict(
        duckdb.sql(
            f"select step, avg(reward) from read_parquet('{out}/**/*.parquet', "
            "hive_partitioning=true) group by step"
        ).fetchall()
    )
    for row in original["step_stats"]:
        assert math.isclose(by_step[row["step"]], row["reward_mean"], rel_tol=1e-12)
    duckdb_cli = Path(sys.executable).with_name(
        "duckdb"
    )  # the duckdb-cli package's command, as a user runs it
    cli = subprocess.run(
        [
            str(duckdb_cli),
            "-csv",
            "-noheader",
            "-c",
            f"select count(*) from read_parquet('{out}/**/*.parquet', hive_partitioning=true)",
        ],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    assert int(cli.stdout.strip()) == original["samples"]
    reread = summary(str(out), {}, tmp_path / "cache3")
    same_run(reread, original)
    assert reread["format"] == "rl-board-parquet" and reread["bad_line_count"] == 0


def test_export_to_a_bucket_and_open_it_from_there(bucket_run, tmp_path):
    url, _, env, _ = bucket_run
    cache = tmp_path / "cache"
    original = summary(url, env, cache)
    target = url.rsplit("/", 1)[0] + "/grpo_math_dataset"
    proc = s3.run_cli(["export", url, target, "--cache-dir", str(cache)], env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    reread = summary(target, env, tmp_path / "cache4")
    same_run(reread, original)
    assert reread["format"] == "rl-board-parquet" and "read in place" in reread["read_as"]
    assert not (tmp_path / "cache4").exists(), "read from the bucket per step, never copied"


def test_a_missing_bucket_is_one_line(server, tmp_path):
    _, proxy = server
    proc = s3.run_cli(
        ["summary", "s3://no-such-bucket-here/run", "--cache-dir", str(tmp_path)],
        s3.s3_env(proxy.url),
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "s3://no-such-bucket-here/run" in proc.stderr


def test_keys_that_would_leave_the_mirror_are_named_not_written(tmp_path):
    """fsspec's in-memory store keeps keys as given, like S3: a key with '..' must not become a local path."""
    import fsspec

    fs = fsspec.filesystem("memory")
    line = b'{"step": 0, "prompt": "p", "response": "r", "reward": 1.0}\n'
    fs.pipe("/evil-bucket/runs/a.jsonl", line)
    fs.store["/evil-bucket/runs/x/../../../escape.jsonl"] = fs.store["/evil-bucket/runs/a.jsonl"]
    fs.pipe("/evil-bucket/runs/model.safetensors", b"\0" * 4096)
    result = remote.mirror("memory://evil-bucket/runs", tmp_path / "cache")
    assert [why for _, why in result.skipped] == ["key has an empty, '.' or '..' part; not mirrored"]
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert not any("escape" in p for p in written)
    weights = result.local / "model.safetensors"
    assert weights.stat().st_size == 4096 and weights.stat().st_blocks == 0, (
        "a checkpoint is named, never fetched"
    )
    assert result.fetched_bytes == len(line)
    fs.rm("/evil-bucket", recursive=True)


def test_a_served_bucket_keeps_its_parquet_datasets_in_the_bucket(bucket_run, tmp_path, server, monkeypatch):
    """`serve s3://bucket/prefix` copies logs, but a Parquet dataset under it is read where it lies."""
    from rl_board.rollouts import lazy
    from rl_board.rollouts.store import RolloutStore
    from rl_board.sources.catalogue import catalogue

    url, _, env, proxy = bucket_run
    endpoint, _ = server
    cache = tmp_path / "cache"
    root = url.rsplit("/", 1)[0]
    proc = s3.run_cli(
        ["export", url, f"{root}/grpo_math.parquet", "--cache-dir", str(tmp_path / "c0")], env, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    for key, value in s3.s3_env(endpoint).items():  # this process reads the bucket too (the server's role)
        monkeypatch.setenv(key, value)
    result = remote.mirror(root, cache)
    assert result.in_place == [f"{root}/grpo_math.parquet"]
    assert not [p for p in result.local.rglob("*.parquet") if p.is_file()], "no dataset file was copied"
    runs = {f.relative: f for f in catalogue(result.local).rollout_folders()}
    assert set(runs) == {"grpo_math", "grpo_math.parquet"}
    store = RolloutStore.open(runs["grpo_math.parquet"].path, cache_dir=cache)
    assert isinstance(store._view, lazy.LazyRunView) and store.source == f"{root}/grpo_math.parquet"
    local = RolloutStore.open(runs["grpo_math"].path, cache_dir=cache)
    assert store.samples_per_step() == local.samples_per_step()
    # a marker planted in an ordinary served folder does not point the server anywhere
    planted = tmp_path / "served" / "evil"
    planted.mkdir(parents=True)
    (planted / remote.IN_PLACE).touch()
    assert remote.in_place_url(planted, cache) is None


def test_runs_scalars_and_check_take_a_url(bucket_run, tmp_path):
    url, local, env, _ = bucket_run
    root = url.rsplit("/", 1)[0]
    cache = str(tmp_path / "cache")
    runs = s3.run_cli(["runs", root, "--json", "--cache-dir", cache], env, cwd=ROOT)
    assert runs.returncode == 0, runs.stderr
    listed = {r["run"]: r for r in json.loads(runs.stdout)["runs"]}
    assert listed["grpo_math"]["samples"] == summary(str(local), {}, tmp_path / "c2")["samples"]
    scalars = s3.run_cli(["scalars", url, "--json", "--cache-dir", cache], env, cwd=ROOT)
    assert scalars.returncode == 0, scalars.stderr
    assert json.loads(scalars.stdout)["runs"], "metrics.jsonl of the bucket's run is read"
    check = s3.run_cli(["check", url, "--json", "--cache-dir", cache], env, cwd=ROOT)
    assert check.returncode in (0, 1), check.stderr
    assert "findings" in json.loads(check.stdout)


def test_an_object_that_cannot_be_fetched_is_named_and_the_rest_mirrored(tmp_path, monkeypatch):
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    fs = fsspec.filesystem("memory")
    line = b'{"step": 0, "prompt": "p", "response": "r", "reward": 1.0}\n'
    fs.pipe("/flaky-bucket/runs/a.jsonl", line)
    fs.pipe("/flaky-bucket/runs/b.jsonl", line)
    real = MemoryFileSystem.cat_file

    def failing(self, path, *args, **kwargs):
        if path.endswith("b.jsonl"):
            raise ConnectionError("connection reset by peer")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "cat_file", failing)
    result = remote.mirror("memory://flaky-bucket/runs", tmp_path / "cache")
    assert [k.rsplit("/", 1)[1] for k, _ in result.skipped] == ["b.jsonl"]
    assert "could not be fetched" in result.skipped[0][1]
    assert (result.local / "a.jsonl").read_bytes() == line and not (result.local / "b.jsonl").exists()
    monkeypatch.setattr(MemoryFileSystem, "cat_file", real)
    again = remote.mirror("memory://flaky-bucket/runs", tmp_path / "cache")
    assert again.fetched_files == 1 and (again.local / "b.jsonl").read_bytes() == line
    fs.rm("/flaky-bucket", recursive=True)


def test_a_served_root_holds_the_first_lines_of_big_logs_until_their_run_is_opened(tmp_path):
    """serve lists a bucket with whole=False: a big rollout log is classified from its head; opening its run
    fetches the rest (the same object: no check windows), and a big metrics log is fetched whole at once."""
    import fsspec

    from rl_board.rollouts.store import RolloutStore
    from rl_board.sources.catalogue import catalogue

    fs = fsspec.filesystem("memory")
    line = json.dumps({"step": 0, "prompt": "p" * 200, "response": "r" * 800, "reward": 0.5})
    rows = [line.replace('"step": 0', f'"step": {k // 100}') for k in range(3000)]
    big = ("\n".join(rows) + "\n").encode()
    metrics = "".join(
        json.dumps({"step": k, "loss": 1.0 / (k + 1), "kl": 0.01 * k}) + "\n" for k in range(40_000)
    )
    assert len(big) > config.sizes().remote_head_bytes and len(metrics) > config.sizes().remote_head_bytes
    fs.pipe("/lazy-bucket/root/run/rollout_data_rank_0.jsonl", big)
    fs.pipe("/lazy-bucket/root/run/train_metrics.jsonl", metrics.encode())
    cache = tmp_path / "cache"
    listed = remote.mirror("memory://lazy-bucket/root", cache, whole=False)
    copy = listed.local / "run" / "rollout_data_rank_0.jsonl"
    head = copy.stat().st_size
    assert (
        head <= config.sizes().remote_head_bytes
        and copy.read_bytes().endswith(b"\n")
        and big.startswith(copy.read_bytes())
    )
    assert (listed.local / "run" / "train_metrics.jsonl").stat().st_size == len(metrics), "metrics read whole"
    assert [f.relative for f in catalogue(listed.local).rollout_folders()] == ["run"]
    assert remote.mirror("memory://lazy-bucket/root", cache, whole=False).fetched_bytes == 0

    store = RolloutStore.open(listed.local / "run", cache_dir=cache)  # what the page does on a click
    assert store.num_samples == 3000 and copy.read_bytes() == big
    assert store.remote.appended_bytes == store.remote.fetched_bytes == len(big) - head  # the rest, no checks
    assert store.source == "memory://lazy-bucket/root/run"
    fs.rm("/lazy-bucket", recursive=True)


def test_a_served_bucket_shows_the_new_points_of_a_grown_metric_log(
    bucket_run, tmp_path, server, monkeypatch
):
    """serve lists its bucket with whole=False, at start and at every look of its follow loop; a metric log
    copied at the first look must gain the points re-uploaded since (the Metrics page reads only the copy)."""
    from rl_board.api import Served, read_metrics

    url, local, _, _ = bucket_run
    endpoint, _ = server
    for key, value in s3.s3_env(endpoint).items():  # this process reads the bucket, as the server does
        monkeypatch.setenv(key, value)
    root, cache = url.rsplit("/", 1)[0], tmp_path / "cache"
    served = remote.mirror(root, cache, whole=False)  # what `serve` does before Streamlit starts
    before = read_metrics(served.local, Served(cache)).series("grpo_math/metrics.jsonl", "train/kl")
    assert len(before) and before["step"].max() == 9

    lines = (local / "metrics.jsonl").read_text().splitlines()
    grown = [json.loads(line) | {"step": 10 + k} for k, line in enumerate(lines[-2:])]
    s3.put_bytes(
        endpoint, f"{url}/metrics.jsonl", ("\n".join([*lines, *map(json.dumps, grown)]) + "\n").encode()
    )
    looked = remote.mirror(root, cache, whole=False)  # one look of the follow loop (remote.follow)
    after = read_metrics(served.local, Served(cache)).series("grpo_math/metrics.jsonl", "train/kl")
    assert after["step"].tolist() == [*before["step"], 10, 11]
    assert after["value"].tolist()[-2:] == [g["train/kl"] for g in grown]
    added = sum(len(json.dumps(g)) + 1 for g in grown)
    assert looked.appended_bytes == added, "only the new lines are fetched"
    rollouts = served.local / "grpo_math" / "rollout_data_rank_0.jsonl"
    assert rollouts.stat().st_size < (local / "rollout_data_rank_0.jsonl").stat().st_size, (
        "a big rollout log still waits for its run to be opened"
    )

    # the follow loop itself, as the server runs it: one more step shows without any call from the page
    more = json.loads(lines[-1]) | {"step": 12}
    s3.put_bytes(
        endpoint,
        f"{url}/metrics.jsonl",
        ("\n".join([*lines, *map(json.dumps, [*grown, more])]) + "\n").encode(),
    )
    stop = threading.Event()
    thread = remote.follow([root], cache, every=0.5, stop=stop)
    try:
        deadline = time.monotonic() + 60
        while (
            read_metrics(served.local, Served(cache))
            .series("grpo_math/metrics.jsonl", "train/kl")["step"]
            .max()
            != 12
        ):
            assert time.monotonic() < deadline, "the follow loop never brought step 12"
            time.sleep(0.5)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive()
