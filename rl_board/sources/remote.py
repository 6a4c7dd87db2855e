"""Logs on object storage (S3, GCS, Hugging Face, any fsspec URL), mirrored into the local cache.

A remote root such as ``s3://bucket/prefix`` is listed with fsspec and its
log files are copied under the cache folder at ``remote/<protocol>/<key>``;
everything downstream (the catalogue, the parser, the columnar cache, live
following) then reads an ordinary local folder. The mirror remembers each
object's size and version (ETag, else mtime), so:

- a reopen of an unchanged run transfers nothing but the listing;
- an object that grew (a log re-uploaded with more lines) is checked by
  reading back a few windows of its old bytes (its start, its end and six
  between, ``check_windows``) in one concurrent batch of range reads; when they
  match, only the added bytes are fetched and appended, and the columnar cache
  reads only those. A rewrite that also grew and changed bytes outside those
  windows is missed, as the local cache's own check would miss it;
- any other change fetches the object again; a deleted object is removed.

Model weights and other checkpoints (``.pt``, ``.safetensors``...) are never
fetched: they get an empty placeholder of the right size so the catalogue
still names them. Credentials and endpoints come from each store's usual
environment (``AWS_ENDPOINT_URL`` for MinIO and other S3-compatible stores).
A key with ``..`` or an empty part is never written locally; it is skipped and
named. Only what lies under the given prefix is listed, so a served remote
root cannot lead to another bucket or prefix.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import posixpath
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rl_board import config, private
from rl_board.errors import NotFoundError, RLBoardError

log = logging.getLogger(__name__)
URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
STATE = ".rl-board-remote.json"  # per mirrored folder: name -> {size, version}
IN_PLACE = (
    ".rl-board-in-place"  # marks a mirrored folder that stands for a Parquet dataset read in the bucket
)
_PARTITION_KEY = re.compile(r"^(?:(.*)/)?step=-?\d+/[^/]+\.parquet$")
CHECK_BETWEEN = 6  # windows between the start and the end of a grown object's old bytes that are read back
HEAD_SUFFIXES = frozenset({".jsonl", ".ndjson"})  # logs whose first lines say what they are
NOT_FETCHED = frozenset({".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".pkl", ".pickle", ".npy", ".npz"})
EXTRAS = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "hf": "huggingface_hub",
    "az": "adlfs",
    "abfs": "adlfs",
}
Progress = Callable[[int, int], None]  # (bytes done, bytes to fetch)


def is_url(text: str | Path) -> bool:
    """Whether a root is a URL (``s3://``, ``gs://``, ``hf://``...) rather than a local path."""
    return (
        isinstance(text, str)
        and bool(URL.match(text.strip()))
        and not text.strip().lower().startswith("file://")
    )


@dataclass
class MirrorResult:
    """What one sync did: the local folder (or file) to read and the bytes it cost."""

    url: str
    local: Path
    objects: int = 0
    fetched_bytes: int = 0  # bytes received from the store (range reads and whole objects, check reads too)
    appended_bytes: int = 0  # of which: new bytes of objects that grew
    fetched_files: int = 0
    unchanged_files: int = 0
    removed_files: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (key, why not mirrored)
    in_place: list[str] = field(default_factory=list)  # Parquet datasets under the URL, read where they lie

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "local": str(self.local)}


class RemoteError(RLBoardError):
    """A remote root that cannot be listed or read (no such bucket, no credentials, no driver)."""


def split(url: str) -> tuple[str, str]:
    """(protocol, normalised path without a trailing slash); ``..`` anywhere is refused."""
    protocol, _, rest = url.strip().partition("://")
    parts = [p for p in rest.split("/") if p]
    if any(p in (".", "..") for p in parts) or "\x00" in rest:
        raise RemoteError(f"{url}: '..' and '.' are not allowed in a remote path")
    if not parts:
        raise RemoteError(f"{url}: name a bucket (and a prefix), e.g. s3://bucket/runs")
    return protocol.lower(), "/".join(parts)


def local_path(url: str, cache_root: Path) -> Path:
    """Where the mirror of ``url`` lives: one tree per protocol, so a run and its root share files."""
    protocol, path = split(url)
    return Path(cache_root).expanduser() / "remote" / _safe(protocol) / path


def url_of(local: Path, cache_root: Path) -> str | None:
    """The URL a folder of the mirror stands for (the inverse of ``local_path``), or None outside it."""
    try:
        parts = Path(local).resolve().relative_to((Path(cache_root).expanduser() / "remote").resolve()).parts
    except (ValueError, OSError):
        return None
    if len(parts) < 2 or not re.fullmatch(r"[a-z0-9+.-]+", parts[0]):
        return None
    return f"{parts[0]}://{'/'.join(parts[1:])}"


def in_place_url(local: Path, cache_root: Path) -> str | None:
    """The dataset URL behind a mirrored folder that stands for a Parquet dataset read in place, else None.

    Only folders of this cache's own mirror count, so a marker file planted in a served folder cannot
    point the server at another bucket: the URL comes from the folder's place in the mirror.
    """
    return url_of(local, cache_root) if (Path(local) / IN_PLACE).is_file() else None


def _datasets_in_place(url: str, base: Path, keys: list[str]) -> set[str]:
    """Folders (relative to the URL) holding ``step=N/*.parquet`` in rl-board's layout: read in place."""
    from rl_board.sources import datasets  # pyarrow: loaded when a bucket is looked at, not by the CLI parser

    candidates = {m[1] or "" for k in keys if (m := _PARTITION_KEY.match(k))}
    found = set()
    for folder in candidates:
        if (base / folder / IN_PLACE).is_file() or datasets.locate(
            f"{url.rstrip('/')}/{folder}" if folder else url
        ) is not None:  # judged at an earlier look: no listing and footer again
            found.add(folder)
    return found


def _under_any(rel: str, folders: set[str]) -> bool:
    """Whether a key lies in a dataset read in place (its step files, its index, anything beside them)."""
    return any(not folder or rel.startswith(folder + "/") for folder in folders)


def mirror(
    url: str, cache_root: Path, progress: Progress | None = None, *, whole: bool = True
) -> MirrorResult:
    """Bring the local mirror of ``url`` (a prefix or one object) up to date; see the module docstring.

    ``whole=False`` (a served root, listed for its runs): a rollout log over ``Sizes.remote_head_bytes`` gets
    only its first complete lines, enough to classify it, and a rollout log already copied is left as it is;
    opening its run completes it (``RolloutStore.open``). Metric logs and event files are brought up to date
    at every look (new bytes only), since nothing else would refresh them.
    """
    protocol, _ = split(url)
    fs, path = _filesystem(url, protocol)
    listing = _listing(fs, path, url)
    base = local_path(url, cache_root)
    result = MirrorResult(url=url, local=base, objects=len(listing))
    single = list(listing) == [path]
    in_place = set() if single else _datasets_in_place(url, base, [k[len(path) + 1 :] for k in listing])
    plans = []
    for key, info in listing.items():
        rel = posixpath.basename(key) if single else key[len(path) + 1 :]
        if _under_any(rel, in_place):
            continue  # a Parquet dataset is read where it lies, per step (rollouts/lazy.py)
        problem = _bad_key(rel)
        if problem:
            result.skipped.append((key, problem))
            continue
        target = (base.parent if single else base) / rel
        plans.append((key, target, int(info.get("size") or 0), _version(info)))
    head_bytes = config.sizes().remote_head_bytes
    total = [
        0,
        sum(
            size if whole or size <= head_bytes or t.suffix.lower() not in HEAD_SUFFIXES else head_bytes
            for _, t, size, _ in plans
            if t.suffix.lower() not in NOT_FETCHED
        ),
    ]
    for key, target, size, version in plans:
        try:
            _sync_one(fs, key, target, size, version, result, total, progress, whole)
        except OSError as exc:  # one object that cannot be fetched never hides the others
            result.skipped.append((key, f"could not be fetched ({exc}); tried again at the next look"))
    for folder in sorted(in_place):
        marker = (base / folder if folder else base) / IN_PLACE
        private.make_dir(marker.parent)
        private.touch(marker)
        result.in_place.append(f"{url.rstrip('/')}/{folder}".rstrip("/"))
    if not single:
        _remove_gone(base, {t for _, t, _, _ in plans}, result)
    if single:
        result.local = base.parent / posixpath.basename(path)
    return result


def follow(
    urls: list[str], cache_root: Path, every: float | None = None, stop: threading.Event | None = None
) -> threading.Thread:
    """Keep the mirrors of served remote roots fresh from a background thread (the server process).

    ``every`` defaults to $RL_BOARD_REMOTE_EVERY (15 s). A failed listing is logged and tried again later.
    The server follows until it exits; setting ``stop`` ends the thread sooner (tests).
    """
    if every is None:
        try:
            every = config.settings().remote_every
        except ValueError:
            every = 15.0
    stop = stop or threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            for url in urls:
                try:
                    mirror(url, cache_root, whole=False)  # runs being looked at complete themselves
                except (RLBoardError, OSError) as exc:
                    log.warning("listing %s failed (tried again in %.0fs): %s", url, every, exc)

    thread = threading.Thread(target=loop, name="rl-board-remote", daemon=True)
    thread.start()
    return thread


def _filesystem(url: str, protocol: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec is a dependency
        raise RemoteError("reading remote roots needs fsspec: pip install fsspec") from None
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        extra = EXTRAS.get(protocol)
        hint = f" (pip install {extra})" if extra else ""
        raise RemoteError(f"cannot open {protocol}:// URLs{hint}: {exc}") from None
    with contextlib.suppress(AttributeError):
        fs.invalidate_cache()  # listings are cached per process; a sync must see the store as it is now
    return fs, path.rstrip("/")


def _listing(fs: Any, path: str, url: str) -> dict[str, dict]:
    """Every object under the prefix (or the object itself), by key; only keys inside the prefix."""
    try:
        found = fs.find(path, detail=True)
    except FileNotFoundError:
        found = {}
    except (OSError, PermissionError) as exc:
        raise RemoteError(f"cannot list {url}: {exc}") from None
    inside = {
        k.rstrip("/"): v
        for k, v in found.items()
        if (k.rstrip("/") == path or k.startswith(path + "/")) and v.get("type", "file") == "file"
    }
    if not inside:
        raise NotFoundError(f"nothing at {url}")
    return inside


def _version(info: dict) -> str:
    for name in ("ETag", "etag", "md5Hash", "generation", "last_commit", "mtime", "LastModified", "updated"):
        if info.get(name) is not None:
            return str(info[name])
    return ""


def _bad_key(rel: str) -> str:
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "key has an empty, '.' or '..' part; not mirrored"
    if parts[-1].startswith(".rl-board"):
        return "name reserved for rl-board's own files; not mirrored"
    if any(len(p.encode()) > 255 for p in parts):
        return "a part of the key is longer than a local file name can be; not mirrored"
    return ""


def _sync_one(
    fs: Any,
    key: str,
    target: Path,
    size: int,
    version: str,
    result: MirrorResult,
    total: list[int],
    progress: Progress | None,
    whole: bool = True,
) -> None:
    """Bring one object's copy up to date (``whole=False``: a big rollout log's first lines are enough)."""
    private.make_dir(target.parent)
    with _state(target.parent) as state:
        old = state.get(target.name)
        here = target.stat().st_size if target.is_file() else -1
        have = old.get("have", old.get("size")) if old else -1  # bytes of the object the copy holds
        same = bool(old and old.get("version") == version and old.get("size") == size)
        if same and here == have and (here == size or not whole):
            result.unchanged_files += 1
            return
        if not whole and old and here == have > 0 and _rollout_log(target):
            return  # a copy already started: completed (and checked) when its run is opened
        if target.suffix.lower() in NOT_FETCHED:  # a checkpoint: named, never fetched
            _placeholder(target, size)
        elif (
            old is not None
            and 0 < here == have < size
            and (old.get("version") == version or _same_prefix(fs, key, target, here, result))
        ):
            _append(fs, key, target, here, size, result, total, progress)  # the rest of the same object, or
        elif not whole and size > config.sizes().remote_head_bytes and target.suffix.lower() in HEAD_SUFFIXES:
            _fetch(
                fs,
                key,
                target,
                config.sizes().remote_head_bytes,
                result,
                total,
                progress,
                cut_at_newline=True,
            )
            if _role(target) != "rollout":  # a long metrics log: the Metrics page reads it all
                _append(fs, key, target, target.stat().st_size, size, result, total, progress)
        else:  # anything else is fetched whole
            _fetch(fs, key, target, size, result, total, progress)
        result.fetched_files += 1
        state[target.name] = {"size": size, "version": version, "have": target.stat().st_size}


def _role(path: Path) -> str:
    from rl_board.sources import sniff  # reads the copy's first lines, as the catalogue will

    return sniff.json_lines(path)[0]


def _rollout_log(path: Path) -> bool:
    """A copy whose run completes it when opened (``RolloutStore.open``), so a served root's look may leave
    it.

    Anything else (a metrics log, an event file) has no such moment: the Metrics page reads the copy as it
    is, so every look must bring it up to date.
    """
    from rl_board.sources import sniff

    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return sniff.parquet(path)[0] == "rollout"
    return suffix in HEAD_SUFFIXES and _role(path) == "rollout"


def check_windows(old_size: int) -> list[tuple[int, int]]:
    """The (start, end) ranges of a grown object read back to tell an append from a rewrite."""
    sizes = config.sizes()
    ends, window = sizes.growth_check_bytes, sizes.growth_window_bytes
    spots = [(0, ends), (old_size - ends, old_size)]
    spots += [
        (old_size * k // (CHECK_BETWEEN + 1), old_size * k // (CHECK_BETWEEN + 1) + window)
        for k in range(1, CHECK_BETWEEN + 1)
    ]
    merged: list[tuple[int, int]] = []
    for start, end in sorted((max(0, a), min(old_size, b)) for a, b in spots):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > start:
            merged.append((start, end))
    return merged


def _same_prefix(fs: Any, key: str, target: Path, old_size: int, result: MirrorResult) -> bool:
    """Whether the object still starts with the bytes the mirror has (``check_windows`` compared)."""
    windows = check_windows(old_size)
    answers = fs.cat_ranges([key] * len(windows), [a for a, _ in windows], [b for _, b in windows])
    result.fetched_bytes += sum(len(a) for a in answers if isinstance(a, bytes))
    with open(target, "rb") as f:
        for (start, end), answer in zip(windows, answers, strict=True):
            f.seek(start)
            if not isinstance(answer, bytes) or f.read(end - start) != answer:
                return False
    return True


def _append(
    fs: Any,
    key: str,
    target: Path,
    start: int,
    size: int,
    result: MirrorResult,
    total: list[int],
    progress: Progress | None,
) -> None:
    with private.open_file(target, "ab") as out:
        for data in _ranges(fs, key, start, size):
            out.write(data)
            result.fetched_bytes += len(data)
            result.appended_bytes += len(data)
            _tick(progress, result, total)


def _fetch(
    fs: Any,
    key: str,
    target: Path,
    size: int,
    result: MirrorResult,
    total: list[int],
    progress: Progress | None,
    cut_at_newline: bool = False,
) -> None:
    """The first ``size`` bytes of an object (its complete lines only, with ``cut_at_newline``)."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".rl-board-part-")
    try:
        os.fchmod(fd, private.FILE_MODE)
        with os.fdopen(fd, "wb+") as out:
            for data in _ranges(fs, key, 0, size):
                out.write(data)
                result.fetched_bytes += len(data)
                _tick(progress, result, total)
            if cut_at_newline:
                out.seek(0)
                out.truncate(out.read().rfind(b"\n") + 1)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _ranges(fs: Any, key: str, start: int, end: int) -> Iterator[bytes]:
    pos = start
    while pos < end:
        data = fs.cat_file(key, start=pos, end=min(pos + config.sizes().remote_chunk_bytes, end))
        if not data:
            return
        yield data
        pos += len(data)


def _placeholder(target: Path, size: int) -> None:
    with private.open_file(target, "wb") as f:
        f.truncate(size)  # sparse: the right size on disk listings, no blocks used


def _tick(progress: Progress | None, result: MirrorResult, total: list[int]) -> None:
    if progress is not None:
        progress(result.fetched_bytes, max(total[1], result.fetched_bytes))


def _remove_gone(base: Path, kept: set[Path], result: MirrorResult) -> None:
    """Mirrored files whose objects are gone from the store."""
    if not base.is_dir():
        return
    for folder, _, files in os.walk(base):
        here = Path(folder)
        names = [n for n in files if not n.startswith(".rl-board")]
        gone = [here / n for n in names if here / n not in kept]
        if not gone:
            continue
        with _state(here) as state:
            for path in gone:
                with contextlib.suppress(OSError):
                    path.unlink()
                state.pop(path.name, None)
                result.removed_files += 1


@contextlib.contextmanager
def _state(folder: Path) -> Iterator[dict]:
    """The folder's mirror state, locked against another process syncing the same folder."""
    lock_path = folder / ".rl-board-remote.lock"
    with private.open_file(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = folder / STATE
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            state = {}
        before = json.dumps(state, sort_keys=True)
        try:
            yield state
        finally:
            if json.dumps(state, sort_keys=True) != before:
                tmp = path.with_suffix(".tmp")
                private.write_text(tmp, json.dumps(state))
                os.replace(tmp, path)


def _safe(name: str) -> str:
    clean = re.sub(r"[^a-z0-9+.-]", "_", name.lower())
    return clean if clean == name.lower() else f"{clean}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"
