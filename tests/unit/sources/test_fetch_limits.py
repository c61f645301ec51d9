"""Download limits beyond one socket read: the total deadline (in the main thread
and in another), and the range checks on ``[fetch]`` settings in ``pp1audit.toml``."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from textwrap import dedent

import pytest
from conftest import REPO, run_cli

from pp1audit.errors import Pp1Error
from pp1audit.sources.cache import Cache, FetchError
from pp1audit.sources.download import download
from pp1audit.sources.runconfig import FetchPolicy, load_config

BODY = b"--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n" * 4
BODY_SHA = hashlib.sha256(BODY).hexdigest()


@pytest.fixture
def server() -> Iterator[str]:
    """``/drip``: one byte every 0.5 s (each read returns well within any read
    timeout, so only a total deadline can end it); ``/ok``: the body at once;
    ``/retry-after``: 503, come back in a minute."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/retry-after":  # a 503 asking for a minute's wait, every time
                self.send_response(503)
                self.send_header("Retry-After", "60")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            if self.path == "/ok":
                self.wfile.write(BODY)
                return
            for i in range(len(BODY)):
                if stop.wait(0.5):
                    return
                try:
                    self.wfile.write(BODY[i:i + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up: as it should
                    return

    class Quiet(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass

    httpd = Quiet(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def manifest(tmp_path: Path, url: str) -> Path:
    m = tmp_path / "m.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        donors:
          d:
            url: {url}
            sha256: "{BODY_SHA}"
    """))
    return m


def test_a_dripping_server_hits_the_total_deadline_and_leaves_no_file(
    server: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    policy = FetchPolicy(connect_timeout=5, read_timeout=5, attempts=3, backoff=0.01,
                         total_timeout=1.5)
    with pytest.raises(FetchError) as info:
        download(f"{server}/drip", BODY_SHA, Cache(cache), policy)
    message = str(info.value)
    assert message == (f"{server}/drip: download did not finish within the total timeout "
                       "of 1.5 s; aborted")
    assert files_under(cache) == []
    # the same through the CLI option: exit 2 (not judged), one line, nothing half-written
    proc = run_cli("fetch", "-m", str(manifest(tmp_path, f"{server}/drip")),
                   "--cache-dir", str(cache), "--total-timeout", "1.5", "--timeout", "5")
    assert proc.returncode == 2, proc.stderr
    assert "did not finish within the total timeout of 1.5 s" in proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
    assert files_under(cache) == []


def test_total_timeout_from_the_config_file(server: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    config = tmp_path / "pp1audit.toml"
    config.write_text("[fetch]\ntotal_timeout = 1.0\ntimeout = 5\n", encoding="utf-8")
    assert load_config(config).policy.total_timeout == 1.0
    proc = run_cli("fetch", "-m", str(manifest(tmp_path, f"{server}/drip")),
                   "--cache-dir", str(cache), "--config", str(config))
    assert proc.returncode == 2 and "within the total timeout of 1 s" in proc.stdout
    assert files_under(cache) == []


def test_the_deadline_holds_in_another_thread_too(server: str, tmp_path: Path) -> None:
    """Off the main thread no signal can interrupt a read: the body's loop checks the
    clock after every read, and a dripping server returns from each one."""
    errors: list[str] = []

    def run() -> None:
        try:
            download(f"{server}/drip", BODY_SHA, Cache(tmp_path / "cache"),
                     FetchPolicy(read_timeout=5, total_timeout=1.5))
        except FetchError as exc:
            errors.append(str(exc))

    started = time.monotonic()
    worker = threading.Thread(target=run)
    worker.start()
    worker.join(20)
    assert not worker.is_alive() and time.monotonic() - started < 5
    assert errors == [f"{server}/drip: download did not finish within the total timeout of "
                      "1.5 s; aborted"]
    assert files_under(tmp_path / "cache") == []


def test_a_long_retry_after_cannot_outlast_the_deadline(server: str, tmp_path: Path) -> None:
    """``Retry`` sleeps as long as ``Retry-After`` says; the deadline interrupts the sleep."""
    started = time.monotonic()
    with pytest.raises(FetchError) as info:
        download(f"{server}/retry-after", BODY_SHA, Cache(tmp_path / "cache"),
                 FetchPolicy(attempts=3, total_timeout=1.0))
    assert time.monotonic() - started < 5
    assert str(info.value) == (f"{server}/retry-after: download did not finish within the total "
                               "timeout of 1 s; aborted")


@pytest.mark.parametrize(("fetch", "words"), [
    ("timeout = -1", "'fetch.timeout' must be a number of seconds > 0 and <= 3600, not -1"),
    ("timeout = 0", "'fetch.timeout' must be a number of seconds > 0"),
    ("timeout = inf", "'fetch.timeout' must be a number of seconds > 0 and <= 3600, not inf"),
    ("timeout = nan", "'fetch.timeout' must be a number of seconds"),
    ("timeout = 3601", "'fetch.timeout' must be a number of seconds > 0 and <= 3600"),
    ("total_timeout = -5", "'fetch.total_timeout' must be a number of seconds > 0"),
    ("max_bytes = 0", "'fetch.max_bytes' must be at least 1, not 0"),
    ("attempts = 0", "'fetch.attempts' must be at least 1, not 0"),
    ("attempts = -3", "'fetch.attempts' must be at least 1, not -3"),
])
def test_out_of_range_fetch_settings_are_one_line_usage_errors(
    tmp_path: Path, fetch: str, words: str
) -> None:
    config = tmp_path / "pp1audit.toml"
    config.write_text(f"[fetch]\n{fetch}\n", encoding="utf-8")
    with pytest.raises(Pp1Error, match=r"^" + str(config).replace(".", r"\.")):
        load_config(config)
    proc = run_cli("fetch", "-m", str(manifest(tmp_path, "http://127.0.0.1:9/x")),
                   "--config", str(config), "--cache-dir", str(tmp_path / "cache"))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(config) in lines[0] and words in lines[0], proc.stderr


def test_in_range_settings_load(tmp_path: Path) -> None:
    config = tmp_path / "pp1audit.toml"
    config.write_text("[fetch]\ntimeout = 3600\nmax_bytes = 1\nattempts = 1\n"
                      "total_timeout = 0.5\n", encoding="utf-8")
    policy = load_config(config).policy
    assert (policy.read_timeout, policy.max_bytes, policy.attempts, policy.total_timeout) == (
        3600, 1, 1, 0.5)


@pytest.mark.parametrize("option", ["--timeout", "--total-timeout"])
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "0"])
def test_a_deadline_must_be_a_finite_positive_number(option: str, value: str) -> None:
    """click's FloatRange accepts NaN (every comparison with it is false), and a
    NaN total deadline would never expire: a usage error here, like inf and 0."""
    proc = run_cli("fetch", "-m", str(REPO / "manifests/examples/vllm-0.31.0.yaml"), option, value,
                   timeout=20)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and f"Invalid value for '{option}'" in proc.stderr
