"""Remote pins: a real HTTP server on 127.0.0.1 serves a donor patch.

Every failure mode the downloader must survive is a real behaviour of this
server (404, a reset in the middle of the body, a stall past the timeout, a body
over the size cap, 5xx then success, a redirect to another port); after each
failure the cache holds no file at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import run_cli
from lanerepo import dedent

from pp1audit.sources.cache import Cache, FetchError
from pp1audit.sources.download import DigestMismatch, check_url, download
from pp1audit.sources.runconfig import FetchPolicy

PATCH = (
    b"From 0055 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] hybrid draft\n\n---\n"
    b"diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
    b"@@ -1,3 +1,3 @@\n a = 1\n-method = 'greedy'\n+method = 'probabilistic'\n c = 3\n"
    b"diff --git a/docs/hybrid.md b/docs/hybrid.md\n--- a/docs/hybrid.md\n+++ b/docs/hybrid.md\n"
    b"@@ -1 +1 @@\n-greedy\n+hybrid\n"
)
PATCH_SHA = hashlib.sha256(PATCH).hexdigest()
WRONG_SHA = "0" * 64


@dataclass
class Server:
    """A running test server: its base URL and how often each path was asked for."""

    url: str
    port: int
    hits: Counter[str]
    release: threading.Event


def _serve(redirect_to: list[int], hits: Counter[str], release: threading.Event) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

        def _body(self, body: bytes, length: bool = True) -> None:
            self.send_response(200)
            if length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path
            hits[path] += 1
            if path == "/0055.patch":
                self._body(PATCH)
            elif path == "/missing.patch":
                self.send_error(404, "Not Found")
            elif path == "/reset.patch":
                self.send_response(200)
                self.send_header("Content-Length", str(len(PATCH)))
                self.end_headers()
                self.wfile.write(PATCH[:40])
                self.wfile.flush()
                # RST instead of FIN: the client sees "connection reset" mid-body
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.close()
            elif path == "/stall.patch":
                self.send_response(200)
                self.send_header("Content-Length", str(len(PATCH)))
                self.end_headers()
                self.wfile.write(PATCH[:40])
                self.wfile.flush()
                release.wait(10)
            elif path == "/big.patch":  # no Content-Length: only streaming can stop it
                self._body(PATCH * 200, length=False)
            elif path == "/big-declared.patch":
                self._body(PATCH * 200)
            elif path == "/big-chunked.patch":  # chunked framing: no length to refuse up front
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                body = PATCH * 200
                for i in range(0, len(body), 1000):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(body[i:i + 1000]), body[i:i + 1000]))
                self.wfile.write(b"0\r\n\r\n")
            elif path == "/down.patch":
                self.send_error(503, "Service Unavailable")
            elif path == "/busy.patch":  # 429 with Retry-After once, then the patch
                if hits[path] == 1:
                    self.send_response(429)
                    self.send_header("Retry-After", "1")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self._body(PATCH)
            elif path == "/slow-headers.patch":  # nothing at all until released
                release.wait(10)
            elif path == "/flaky.patch":
                if hits[path] <= 2:
                    self.send_error(503, "Service Unavailable")
                else:
                    self._body(PATCH)
            elif path == "/redirect.patch":
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{redirect_to[0]}/0055.patch")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif path == "/bad-location.patch":  # an unparsable redirect target
                self.send_response(302)
                self.send_header("Location", "http://[::1")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif path == "/redirect-wrong.patch":
                self.send_response(301)
                self.send_header("Location", f"http://127.0.0.1:{redirect_to[0]}/big-declared.patch")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.send_error(404, "Not Found")

    class QuietServer(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass  # the reset handler breaks its own connection on purpose

    return QuietServer(("127.0.0.1", 0), Handler)


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    """Two servers on two ports; the first redirects to the second."""
    release = threading.Event()
    hits: Counter[str] = Counter()
    target_port: list[int] = []
    first = _serve(target_port, hits, release)
    second = _serve(target_port, hits, release)
    target_port.append(second.server_address[1])
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (first, second)]
    for t in threads:
        t.start()
    try:
        yield tuple(  # type: ignore[misc]
            Server(f"http://127.0.0.1:{s.server_address[1]}", s.server_address[1], hits, release)
            for s in (first, second)
        )
    finally:
        release.set()
        for s in (first, second):
            s.shutdown()
            s.server_close()


@pytest.fixture
def server(servers: tuple[Server, Server]) -> Server:
    return servers[0]


def cached_files(cache: Path) -> list[Path]:
    """Every file (not directory) under the cache: partial files included."""
    return sorted(p for p in cache.rglob("*") if not p.is_dir()) if cache.exists() else []


FAST = FetchPolicy(connect_timeout=2, read_timeout=0.5, max_bytes=4096, attempts=1, backoff=0.01)


def fetch_manifest(tmp_path: Path, url: str, sha: str = PATCH_SHA) -> Path:
    m = tmp_path / "m.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        donors:
          hybrid-0055:
            url: {url}
            sha256: "{sha}"
            commit: afe4d5e41ec6fa4db17c5cc88758af439a106913
            expect: not-applied
    """))
    return m


def test_fetch_with_correct_digest_caches_and_check_passes(
    server: Server, tmp_path: Path, make_files
) -> None:  # type: ignore[no-untyped-def]
    cache = tmp_path / "cache"
    m = fetch_manifest(tmp_path, f"{server.url}/0055.patch")
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache))
    assert proc.returncode == 0, proc.stderr
    assert "hybrid-0055: fetched" in proc.stdout and "SHA-256 verified" in proc.stdout
    assert cached_files(cache) == [cache / "sha256" / PATCH_SHA]
    assert (cache / "sha256" / PATCH_SHA).read_bytes() == PATCH
    # a second fetch is served from the cache
    again = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache))
    assert "already cached" in again.stdout and server.hits["/0055.patch"] == 1
    tree = make_files({"pkg/__init__.py": "", "pkg/mod.py": "a = 1\nmethod = 'greedy'\nc = 3\n"})
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache), "--format", "json")
    assert proc.returncode == 0, proc.stdout
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["hybrid-0055"]["status"] == "pass"
    assert checks["hybrid-0055:hunks"]["status"] == "pass"
    assert checks["hybrid-0055:hunks"]["message"] == (
        "hybrid-0055 is not applied in the target: all 1 hunk(s) not applied; "
        "1 hunk(s) outside pkg/ not checked")
    assert checks["hybrid-0055:pkg/mod.py#1"]["actual"] == "not applied"
    # the same patch applied in the target: the audit's statement fails, per hunk
    (tree / "pkg/mod.py").write_text("a = 1\nmethod = 'probabilistic'\nc = 3\n")
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache), "--format", "json")
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert proc.returncode == 1
    assert checks["hybrid-0055:hunks"]["status"] == "fail"
    assert "pkg/mod.py#1 applied" in checks["hybrid-0055:hunks"]["message"]
    assert checks["hybrid-0055:pkg/mod.py#1"]["found_lines"] == [1, 3]


def test_wrong_digest_fails_and_caches_nothing(server: Server, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    m = fetch_manifest(tmp_path, f"{server.url}/0055.patch", sha=WRONG_SHA)
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache))
    assert proc.returncode == 1  # other bytes than pinned: a verdict, not "nothing judged"
    assert f"SHA-256 {PATCH_SHA} differs from the pinned {WRONG_SHA}; not cached" in proc.stdout
    assert cached_files(cache) == []
    with pytest.raises(DigestMismatch):
        download(f"{server.url}/0055.patch", WRONG_SHA, Cache(cache), FAST)
    assert cached_files(cache) == []


@pytest.mark.parametrize(("path", "expected"), [
    ("/missing.patch", "HTTP 404 Not Found"),
    ("/reset.patch", "connection failed: Connection reset by peer"),
    ("/stall.patch", "read timed out after 0.5 s (server stalled)"),
    ("/big.patch", "body exceeds the size cap of 4096 bytes; aborted"),
    ("/big-declared.patch", f"Content-Length {len(PATCH) * 200} exceeds the size cap of 4096 bytes"),
    ("/big-chunked.patch", "body exceeds the size cap of 4096 bytes; aborted"),
], ids=["404", "reset", "stall", "over-cap-streamed", "over-cap-declared", "over-cap-chunked"])
def test_each_failure_is_one_clear_line_and_leaves_no_file(
    server: Server, tmp_path: Path, path: str, expected: str
) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(FetchError) as info:
        download(server.url + path, PATCH_SHA, Cache(cache), FAST)
    message = str(info.value)
    assert expected in message and server.url + path in message
    assert "\n" not in message
    assert cached_files(cache) == []
    # the same through the CLI: exit 2 (nothing judged), the line on stdout, no traceback
    m = fetch_manifest(tmp_path, server.url + path)
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache), "--timeout", "0.5",
                   "--max-bytes", "4096", "--attempts", "1")
    assert proc.returncode == 2 and expected in proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
    assert cached_files(cache) == []


def test_5xx_is_retried_with_backoff_and_4xx_is_not(server: Server, tmp_path: Path) -> None:
    """urllib3's ``Retry``: 503 twice then 200 is a success; 503 for ever names the
    status after the tries; a 404 will not heal and is asked once."""
    cache = Cache(tmp_path / "cache")
    policy = FetchPolicy(read_timeout=2, attempts=3, backoff=0.01)
    got = download(f"{server.url}/flaky.patch", PATCH_SHA, cache, policy)
    assert got.path.read_bytes() == PATCH and server.hits["/flaky.patch"] == 3
    with pytest.raises(FetchError) as info:
        download(f"{server.url}/down.patch", WRONG_SHA, cache, policy)
    assert str(info.value) == (f"{server.url}/down.patch: HTTP 503 Service Unavailable "
                               "after 3 attempts")
    assert server.hits["/down.patch"] == 3
    with pytest.raises(FetchError, match="HTTP 404"):
        download(f"{server.url}/missing.patch", WRONG_SHA, cache, policy)
    assert server.hits["/missing.patch"] == 1
    assert cached_files(tmp_path / "cache") == [tmp_path / "cache" / "sha256" / PATCH_SHA]


def test_a_stall_is_retried_before_the_headers_only(server: Server, tmp_path: Path) -> None:
    """urllib3 retries a request up to its response headers; a body that stalls
    half-way is one failure (the hand-written loop that retried it is gone)."""
    policy = FetchPolicy(read_timeout=0.2, attempts=3, backoff=0.01)
    with pytest.raises(FetchError) as info:
        download(f"{server.url}/slow-headers.patch", PATCH_SHA, Cache(tmp_path), policy)
    assert str(info.value) == (f"{server.url}/slow-headers.patch: read timed out after 0.2 s "
                               "(server stalled) after 3 attempts")
    assert server.hits["/slow-headers.patch"] == 3
    with pytest.raises(FetchError) as info:
        download(f"{server.url}/stall.patch", PATCH_SHA, Cache(tmp_path), policy)
    assert str(info.value) == f"{server.url}/stall.patch: read timed out after 0.2 s (server stalled)"
    assert server.hits["/stall.patch"] == 1
    assert cached_files(tmp_path) == []


def test_retry_after_is_respected(server: Server, tmp_path: Path) -> None:
    """A 429 saying ``Retry-After: 1`` is asked again after a second (the backoff
    alone would have retried at once)."""
    started = time.monotonic()
    got = download(f"{server.url}/busy.patch", PATCH_SHA, Cache(tmp_path),
                   FetchPolicy(attempts=2, backoff=0.01))
    assert got.path.read_bytes() == PATCH and server.hits["/busy.patch"] == 2
    assert 0.9 <= time.monotonic() - started < 10


def test_redirect_to_another_port_is_followed_with_the_digest_enforced(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    first, second = servers
    cache = tmp_path / "cache"
    m = fetch_manifest(tmp_path, f"{first.url}/redirect.patch")
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache))
    assert proc.returncode == 0, proc.stdout
    assert f"via 1 redirect(s) from {second.url}/0055.patch" in proc.stdout
    assert cached_files(cache) == [cache / "sha256" / PATCH_SHA]
    # the redirect target serves other bytes: refused, nothing cached
    other = tmp_path / "other"
    with pytest.raises(DigestMismatch) as info:
        download(f"{first.url}/redirect-wrong.patch", PATCH_SHA, Cache(other),
                 FetchPolicy(max_bytes=1 << 20))
    assert f"{second.url}/big-declared.patch" in str(info.value)
    assert cached_files(other) == []


def test_nothing_listening_is_a_clear_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(FetchError) as info:
        download(f"http://127.0.0.1:{port}/x.patch", PATCH_SHA, Cache(tmp_path), FAST)
    assert str(info.value) == f"http://127.0.0.1:{port}/x.patch: connection failed: Connection refused"


def test_only_https_or_loopback_http() -> None:
    for url in ("http://example.invalid/x.patch", "ftp://127.0.0.1/x", "file:///etc/passwd"):
        with pytest.raises(FetchError, match="refused"):
            check_url(url)
    for url in ("https://example.invalid/x", "http://127.0.0.1:8/x", "http://[::1]:8/x",
                "http://localhost/x"):
        check_url(url)


def test_check_is_offline_by_default_and_fetch_fills_the_cache(
    server: Server, tmp_path: Path, make_files
) -> None:  # type: ignore[no-untyped-def]
    cache = tmp_path / "cache"
    tree = make_files({"pkg/__init__.py": "", "pkg/mod.py": "a = 1\nmethod = 'greedy'\nc = 3\n"})
    m = fetch_manifest(tmp_path, f"{server.url}/0055.patch")
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache), "-v")
    assert proc.returncode == 2  # the donor's checks skipped, and nothing else: nothing judged
    assert "every check was skipped" in proc.stderr and "run pp1audit fetch" in proc.stderr
    assert server.hits["/0055.patch"] == 0
    assert run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache),
                   "--require-all").returncode == 2
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache), "--fetch",
                   "--require-all")
    assert proc.returncode == 0, proc.stdout
    assert server.hits["/0055.patch"] == 1
    # a tampered cache entry is an error, never silently trusted
    entry = cache / "sha256" / PATCH_SHA
    entry.chmod(0o644)
    entry.write_bytes(PATCH + b"# tampered\n")
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache), "--format", "json")
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert proc.returncode == 1 and checks["hybrid-0055"]["status"] == "error"
    assert "delete it and run pp1audit fetch" in checks["hybrid-0055"]["message"]


def test_offline_never_opens_a_socket(
    server: Server, tmp_path: Path, make_files, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """--offline (and the default check) never connect, even with a pin to fetch."""
    from pp1audit.cli import main

    tree = make_files({"pkg/__init__.py": "", "pkg/mod.py": "a = 1\nmethod = 'greedy'\nc = 3\n"})
    cache = tmp_path / "cache"
    m = fetch_manifest(tmp_path, f"{server.url}/0055.patch")
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("socket use in an offline run")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    codes = []
    for extra in (["--offline"], []):
        with pytest.raises(SystemExit) as done:
            main(["check", str(tree), "-m", str(m), "--cache-dir", str(cache), "--format",
                  "json", *extra])
        codes.append(done.value.code)
    assert attempts == [] and codes == [2, 2]  # not fetched, so nothing judged
    # the guard is real: a fetching run does try to connect, and is refused
    with pytest.raises(SystemExit):
        main(["check", str(tree), "-m", str(m), "--cache-dir", str(cache), "--fetch"])
    assert attempts
    assert cached_files(cache) == []


def test_tls_is_always_verified(tmp_path: Path) -> None:
    """An https server with a self-signed certificate is refused, and nothing is cached."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a self-signed certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    httpd = _serve([0], Counter(), threading.Event())
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"https://127.0.0.1:{httpd.server_address[1]}/0055.patch"
        with pytest.raises(FetchError) as info:
            download(url, PATCH_SHA, Cache(tmp_path / "cache"), FAST)
        # what the ssl module said, in words: not requests' nested reprs
        assert str(info.value) == f"{url}: TLS certificate not trusted: self-signed certificate"
        assert cached_files(tmp_path / "cache") == []
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_unusable_cache_is_a_one_line_error(server: Server, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "sha256").write_text("a file where the cache's directory should be")
    with pytest.raises(FetchError) as info:
        download(f"{server.url}/0055.patch", PATCH_SHA, Cache(cache), FAST)
    assert str(info.value).startswith("<cache>/sha256: cannot write to the cache")
    m = fetch_manifest(tmp_path, f"{server.url}/0055.patch")
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache))
    assert proc.returncode == 2 and "cannot write to the cache" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


OTHER = b"# another pinned file\n"
OTHER_SHA = hashlib.sha256(OTHER).hexdigest()
NO_PROXY = {k: "" for k in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")}
"""A proxy from the environment would answer for an unusable host itself."""


def two_pins(tmp_path: Path, bad: str, good: str) -> Path:
    """A manifest with a pin whose URL cannot be used, and one that can (other digests,
    so the content-addressed cache cannot satisfy one with the other's bytes)."""
    m = tmp_path / "two.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        remotes:
          bad: {{url: "https://example.invalid/x.py", download: "{bad}", path: x.py,
                 sha256: "{OTHER_SHA}"}}
        donors:
          hybrid-0055: {{url: "{good}", sha256: "{PATCH_SHA}"}}
    """))
    return m


@pytest.mark.parametrize(("bad", "reason"), [
    ("/bad-location.patch", "redirect to http://[::1: not a valid URL (Invalid IPv6 URL)"),
    ("https://a..b/x.py", "not a valid URL (Failed to parse: 'a..b', label empty or too long)"),
], ids=["redirect-location", "host"])
def test_a_malformed_url_fails_its_pin_only(
    server: Server, tmp_path: Path, make_files, bad: str, reason: str
) -> None:  # type: ignore[no-untyped-def]
    bad = server.url + bad if bad.startswith("/") else bad
    expected = f"{bad}: {reason}"
    m = two_pins(tmp_path, bad, f"{server.url}/0055.patch")
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(tmp_path / "cache"), env=NO_PROXY)
    assert proc.returncode == 2, proc.stderr  # one pin could not be fetched: not judged
    assert proc.stdout.splitlines()[:2] == [
        f"FAILED  bad: {expected}", f"ok      hybrid-0055: fetched {len(PATCH)} bytes; SHA-256 verified"]
    # check --fetch: that pin is an error, the other is judged
    tree = make_files({"pkg/__init__.py": "", "pkg/mod.py": "a = 1\nmethod = 'greedy'\nc = 3\n"})
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(tmp_path / "c2"),
                   "--fetch", "--format", "json", env=NO_PROXY)
    assert proc.returncode == 1, proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["bad"]["status"] == "error" and checks["bad"]["message"] == expected
    assert checks["hybrid-0055"]["status"] == "pass"
    assert checks["hybrid-0055:hunks"]["status"] == "pass"


def test_a_malformed_url_in_the_manifest_is_a_manifest_error(tmp_path: Path, make_files) -> None:  # type: ignore[no-untyped-def]
    tree = make_files({"pkg/__init__.py": ""})
    for key in ("url", "download"):
        line = (f"  r1: {{sha256: '{OTHER_SHA}', url: 'https://h.invalid/x.py', "
                f"{key}: 'https://[::1/x.py'}}")
        if key == "url":
            line = line.replace("url: 'https://h.invalid/x.py', ", "")
        m = tmp_path / "m.yaml"
        m.write_text(f"pp1audit: 1\ntarget: {{package: pkg}}\nremotes:\n{line}\n")
        proc = run_cli("check", str(tree), "-m", str(m))
        assert proc.returncode == 2
        column = line.index("'https://[::1") + 1
        assert proc.stderr == (f"pp1audit: error: {m}:4:{column}: not a valid URL "
                               f"(Invalid IPv6 URL) (at remotes.r1.{key})\n")


def cached_pin(tmp_path: Path, make_files) -> tuple[Path, Path, Path]:  # type: ignore[no-untyped-def]
    """A tree, a manifest citing a remote pin of OTHER, and its (empty) cache."""
    tree = make_files({"pkg/__init__.py": ""})
    m = tmp_path / "cite.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        remotes:
          r1: {{url: "https://example.invalid/other.py", sha256: "{OTHER_SHA}"}}
        citations:
          c1: {{source: r1, at: "other.py:1", anchor: {{exact: "# another pinned file"}}}}
    """))
    cache = tmp_path / "cache"
    (cache / "sha256").mkdir(parents=True)
    return tree, m, cache


def test_a_cache_entry_that_is_not_a_regular_file_is_never_opened(
    tmp_path: Path, make_files
) -> None:  # type: ignore[no-untyped-def]
    """A FIFO would block the read forever; a link to /dev/zero would exhaust memory."""
    tree, m, cache = cached_pin(tmp_path, make_files)
    entry = cache / "sha256" / OTHER_SHA
    good = tmp_path / "other.py"
    good.write_bytes(OTHER)
    for make, kind in ((os.mkfifo, "FIFO"), (lambda p: p.symlink_to("/dev/zero"), "symbolic link"),
                       (lambda p: p.symlink_to(good), "symbolic link")):
        make(entry)
        proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache),
                       "--format", "json", timeout=30)
        assert proc.returncode == 1, proc.stderr
        checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
        for cid in ("r1", "c1"):
            assert checks[cid]["status"] == "error"
            assert checks[cid]["message"] == (
                f"<cache>/sha256/{OTHER_SHA}: cached entry is a {kind}, not a regular file; not opened "
                "(delete it and run pp1audit fetch)")
        entry.unlink()
    # the cap: an entry larger than the download cap is not read whole
    entry.write_bytes(OTHER)
    assert Cache(cache).lookup(OTHER_SHA) == OTHER
    with pytest.raises(FetchError, match=f"^<cache>/sha256/{OTHER_SHA}: cached file of "
                                         f"{len(OTHER)} bytes exceeds the size cap of 8 bytes; "
                                         "not read "):
        Cache(cache, max_bytes=8).lookup(OTHER_SHA)
    config = tmp_path / "pp1audit.toml"
    config.write_text("[fetch]\nmax_bytes = 8\n")
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache), "--config",
                   str(config), "--format", "json")
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert proc.returncode == 1 and "exceeds the size cap of 8 bytes" in checks["r1"]["message"]


def test_fetch_replaces_a_cache_entry_that_is_a_fifo(server: Server, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "sha256").mkdir(parents=True)
    os.mkfifo(cache / "sha256" / PATCH_SHA)
    m = fetch_manifest(tmp_path, f"{server.url}/0055.patch")
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache), timeout=30)
    assert proc.returncode == 0, proc.stdout
    assert (cache / "sha256" / PATCH_SHA).read_bytes() == PATCH


def test_requests_is_imported_only_when_a_download_happens(
    server: Server, tmp_path: Path, make_files
) -> None:  # type: ignore[no-untyped-def]
    """A ``check`` of a manifest with remote pins, without ``--fetch``, reads the cache
    only: requests and urllib3 (~100 ms of imports) are never loaded."""
    tree = make_files({"pkg/__init__.py": "", "pkg/mod.py": "a = 1\nmethod = 'greedy'\nc = 3\n"})
    m = fetch_manifest(tmp_path, f"{server.url}/0055.patch")
    code = ("import sys\nfrom pp1audit.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(n for n in ('requests', 'urllib3') if n in sys.modules), file=sys.stderr)")
    loaded = []
    for extra in ([], ["--fetch"]):
        proc = subprocess.run([sys.executable, "-c", code, "check", str(tree), "-m", str(m),
                               "--cache-dir", str(tmp_path / "cache"), *extra],
                              capture_output=True, text=True, timeout=60, check=False)
        loaded.append(proc.stderr.strip().splitlines()[-1])
    assert loaded == ["[]", "['requests', 'urllib3']"]
    assert server.hits["/0055.patch"] == 1
