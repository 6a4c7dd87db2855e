"""A real S3-compatible server on 127.0.0.1 (moto in server mode) and a byte-counting TCP proxy.

The proxy sits between rl-board and the server and counts every byte the
server sends back (headers, listings and object bytes), so a test can say how
much a command transferred without trusting rl-board's own count.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """Start ``moto_server`` on a free loopback port; yields its endpoint URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url + "/moto-api/", proc, 30, "moto server did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def wait_until_up(url: str, proc: subprocess.Popen, timeout_s: float, failure: str) -> None:
    """Poll ``url`` until it answers; RuntimeError(``failure``) if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(failure) from None
            time.sleep(0.2)


def s3_env(endpoint: str) -> dict[str, str]:
    """The environment a client (rl-board, s3fs, boto3) needs to talk to ``endpoint``."""
    return {**CREDENTIALS, "AWS_ENDPOINT_URL": endpoint}


class CountingProxy:
    """Relays loopback TCP connections to ``target`` and counts the bytes coming back from it."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received = 0  # bytes from the server to clients
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> None:
        with self._lock:
            self.received = 0

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, count: bool) -> None:
        try:
            while data := src.recv(65536):
                if count:
                    with self._lock:
                        self.received += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()


def upload(endpoint: str, local: Path, url: str) -> None:
    """Copy a local folder (or file) to ``url`` with s3fs, as a trainer's sync job would."""
    import s3fs

    fs = s3fs.S3FileSystem(
        endpoint_url=endpoint,
        key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    bucket = url.removeprefix("s3://").split("/")[0]
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    fs.put(str(local), url.removeprefix("s3://"), recursive=Path(local).is_dir())


def put_bytes(endpoint: str, url: str, data: bytes) -> None:
    """Replace one object (S3 cannot append: a growing log is re-uploaded whole)."""
    import s3fs

    fs = s3fs.S3FileSystem(
        endpoint_url=endpoint,
        key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    fs.pipe(url.removeprefix("s3://"), data)


def delete(endpoint: str, url: str) -> None:
    """Remove one object."""
    import s3fs

    fs = s3fs.S3FileSystem(
        endpoint_url=endpoint,
        key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    fs.rm(url.removeprefix("s3://"))


def run_cli(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``rl-board ARGS`` as a subprocess, with the S3 environment."""
    full = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-m", "rl_board", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd,
        timeout=300,
    )
