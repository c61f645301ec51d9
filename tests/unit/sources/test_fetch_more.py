"""Remote pins, from a user test: the total deadline while a server drips its
response headers, a response cut off inside them, error lines in words, one size
cap for every command that reads the cache, an unusable cache named by the
environment or a config file, and a ``--repo`` NAME given twice.

The servers are real sockets on 127.0.0.1 started here: a hand-written one for
answers no well-behaved server library would send.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import run_cli
from lanerepo import dedent

from pp1audit.errors import Pp1Error
from pp1audit.sources.cache import Cache, FetchError
from pp1audit.sources.download import download
from pp1audit.sources.runconfig import FetchPolicy, resolve_options

BODY = b"# another pinned file\n" + b"x = 1\n" * 800
BODY_SHA = hashlib.sha256(BODY).hexdigest()
DRIP = b"HTTP/1.1 200 OK\r\nX-Drip: " + b"a" * 250
"""Status line and a header that never ends: one byte every 0.1 s is 27 s."""
DRIP_PAUSE = 0.1


def canned() -> dict[str, bytes]:
    """Whole answers by path, sent as they are (then the connection is closed)."""
    n = len(BODY)
    return {
        "/other.py": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n + BODY,
        "/cut-headers": b"HTTP/1.1 200 OK\r\nX-Drip: aaa",
        "/short-cl": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                     % (n + 100) + BODY,
        "/garbage": b"HELLO THIS IS NOT HTTP\r\n\r\n",
        "/long-header": b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 70000 + b"\r\n\r\n",
        "/many-headers": b"HTTP/1.1 200 OK\r\n"
                         + b"".join(b"X-%d: a\r\n" % i for i in range(120)) + b"\r\n",
        "/silent": b"",
        "/chunked-bad": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"10\r\n" + BODY[:16] + b"\r\nZZ\r\n",
        "/gzip-bad": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
                     % n + BODY,
        "/302-no-location": b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n",
        "/to-file": b"HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\n"
                    b"Content-Length: 0\r\n\r\n",
        "/to-plain-http": b"HTTP/1.1 302 Found\r\nLocation: http://example.invalid/x.py\r\n"
                          b"Content-Length: 0\r\n\r\n",
        "/to-odd": b"HTTP/1.1 302 Found\r\nLocation: file:///C:\\evil\x1b[2J\r\n"
                   b"Content-Length: 0\r\n\r\n",
        "/odd-reason": b"HTTP/1.1 404 No\\pe\x1b[2J\r\nContent-Length: 0\r\n\r\n",
    }


@dataclass
class Raw:
    """A raw-socket server: its URL, requests per path, and what the drip saw."""

    url: str
    hits: Counter[str] = field(default_factory=Counter)
    dripped: int = 0
    """Bytes of ``DRIP`` sent before the client went away (or all of them)."""
    client_left: threading.Event = field(default_factory=threading.Event)
    """Set when a drip send failed: the client closed while bytes were left."""
    stop: threading.Event = field(default_factory=threading.Event)


def _drip(conn: socket.socket, raw: Raw) -> None:
    for i in range(len(DRIP)):
        try:
            conn.sendall(DRIP[i:i + 1])
        except OSError:
            raw.client_left.set()
            return
        raw.dripped = i + 1
        if raw.stop.wait(DRIP_PAUSE):
            return


def _handle(conn: socket.socket, raw: Raw, table: dict[str, bytes]) -> None:
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            more = conn.recv(4096)
            if not more:
                return
            data += more
        path = data.split(b" ")[1].decode()
        raw.hits[path] += 1
        if path == "/drip":
            _drip(conn, raw)
            return
        try:
            conn.sendall(table.get(path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
            conn.shutdown(socket.SHUT_WR)
            raw.stop.wait(0.2)  # let the client read before the close
        except OSError:
            pass


@pytest.fixture
def raw() -> Iterator[Raw]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    server = Raw(f"http://127.0.0.1:{listener.getsockname()[1]}")
    table = canned()

    def serve() -> None:
        while not server.stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_handle, args=(conn, server, table), daemon=True).start()

    serving = threading.Thread(target=serve, daemon=True)
    serving.start()
    try:
        yield server
    finally:
        # close() alone does not wake a thread blocked in accept() on Linux: the
        # thread and the listening port would outlive the test. shutdown() does.
        server.stop.set()
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        serving.join(5)
        assert not serving.is_alive(), "the test server did not stop"


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if not p.is_dir()) if root.exists() else []


def pin_manifest(tmp_path: Path, url: str) -> Path:
    """A manifest citing line 1 of a remote pin of ``BODY`` downloaded from ``url``."""
    m = tmp_path / "m.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        remotes:
          r1: {{url: "https://example.invalid/other.py", download: "{url}", path: other.py,
                sha256: "{BODY_SHA}"}}
        citations:
          c1: {{source: r1, at: "other.py:1", anchor: {{exact: "# another pinned file"}}}}
    """))
    return m


# -- 1. the total deadline holds while headers drip; a cut-off header block is no answer


def test_dripping_headers_are_cut_off_at_the_total_deadline(raw: Raw, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    proc = run_cli("fetch", "-m", str(pin_manifest(tmp_path, f"{raw.url}/drip")),
                   "--cache-dir", str(cache), "--attempts", "1", "--total-timeout", "1.5",
                   "--timeout", "5", timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr  # not judged: no hash mismatch
    assert proc.stdout.splitlines()[0] == (
        f"FAILED  r1: {raw.url}/drip: download did not finish within the total timeout of "
        "1.5 s; aborted")
    assert "SHA-256" not in proc.stdout
    assert files_under(cache) == []
    # the run ended while the server still had bytes to drip: the client hung up on it
    assert raw.client_left.wait(10)
    assert raw.dripped < len(DRIP)


def test_dripping_headers_through_download(raw: Raw, tmp_path: Path) -> None:
    policy = FetchPolicy(connect_timeout=5, read_timeout=5, attempts=3, backoff=0.01,
                         total_timeout=1.0)
    with pytest.raises(FetchError) as info:
        download(f"{raw.url}/drip", BODY_SHA, Cache(tmp_path / "cache"), policy)
    assert str(info.value) == (f"{raw.url}/drip: download did not finish within the total "
                               "timeout of 1 s; aborted")
    assert raw.client_left.wait(10) and raw.dripped < len(DRIP)
    assert files_under(tmp_path / "cache") == []


def test_a_response_cut_off_inside_its_headers_is_never_cached(raw: Raw, tmp_path: Path) -> None:
    """http.client ends a header block at end of file as at the blank line, and a
    body without framing ends at end of file too: the cut-off answer is an empty
    body, other bytes than pinned (exit 1), and nothing reaches the cache. (The
    hand-written header parser that told it apart as a network failure is gone.)"""
    cache = tmp_path / "cache"
    proc = run_cli("fetch", "-m", str(pin_manifest(tmp_path, f"{raw.url}/cut-headers")),
                   "--cache-dir", str(cache), "--attempts", "2", timeout=60)
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout.splitlines()[0] == (
        f"FAILED  r1: {raw.url}/cut-headers: SHA-256 {hashlib.sha256(b'').hexdigest()} "
        f"differs from the pinned {BODY_SHA}; not cached")
    assert files_under(cache) == []


# -- 3. error lines in words, naming the pinned URL


@pytest.mark.parametrize(("path", "reason"), [
    ("/short-cl", f"connection broken: {len(BODY)} of {len(BODY) + 100} bytes received"),
    ("/garbage", "bad HTTP response: HELLO THIS IS NOT HTTP"),
    ("/long-header", "bad HTTP response: got more than 65536 bytes when reading header line"),
    ("/many-headers", "bad HTTP response: got more than 100 headers"),
    ("/silent", "bad HTTP response: Remote end closed connection without response"),
    ("/chunked-bad", "connection broken: chunked body cut off or malformed"),
    ("/gzip-bad", "body could not be decoded (Error -3 while decompressing data: incorrect "
                  "header check)"),
    ("/302-no-location", "redirect without a Location header (HTTP 302 Found)"),
])
def test_network_failures_are_told_in_words(
    raw: Raw, tmp_path: Path, path: str, reason: str
) -> None:
    policy = FetchPolicy(read_timeout=5, attempts=1, total_timeout=10)
    with pytest.raises(FetchError) as info:
        download(raw.url + path, BODY_SHA, Cache(tmp_path / "cache"), policy)
    assert str(info.value) == f"{raw.url}{path}: {reason}"
    assert files_under(tmp_path / "cache") == []


def test_a_network_failure_line_through_the_cli(raw: Raw, tmp_path: Path) -> None:
    proc = run_cli("fetch", "-m", str(pin_manifest(tmp_path, f"{raw.url}/short-cl")),
                   "--cache-dir", str(tmp_path / "cache"), "--attempts", "1", timeout=60)
    assert proc.returncode == 2
    assert proc.stdout.splitlines()[0] == (
        f"FAILED  r1: {raw.url}/short-cl: connection broken: {len(BODY)} of {len(BODY) + 100} "
        "bytes received")


@pytest.mark.parametrize(("path", "target", "reason"), [
    ("/to-file", "file:///etc/passwd", "scheme 'file' refused (https only)"),
    ("/to-plain-http", "http://example.invalid/x.py",
     "plain http refused (https only, except loopback addresses)"),
])
def test_a_refused_redirect_names_the_pinned_url(
    raw: Raw, tmp_path: Path, path: str, target: str, reason: str
) -> None:
    with pytest.raises(FetchError) as info:
        download(raw.url + path, BODY_SHA, Cache(tmp_path / "cache"), FetchPolicy(attempts=1))
    assert str(info.value) == f"{raw.url}{path} redirected to {target}: {reason}"


def test_what_a_server_says_is_escaped_once_in_every_output(
    raw: Raw, tmp_path: Path, make_files: Callable[[dict[str, str]], Path]
) -> None:
    """A Location holding a backslash and an escape sequence: raw in the core and in
    JSON, escaped once in ``fetch``'s lines and in ``check``'s text (escaped when the
    message was made and again when shown, ``C:\\evil`` read as ``C:\\\\evil``)."""
    m = pin_manifest(tmp_path, f"{raw.url}/to-odd")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    shown = "redirected to file:///C:\\\\evil\\x1b[2J: scheme 'file' refused (https only)"
    proc = run_cli("fetch", "-m", str(m), *cache, "--attempts", "1", timeout=60)
    assert proc.returncode == 2
    assert proc.stdout.splitlines()[0].endswith(shown), proc.stdout
    assert "\x1b" not in proc.stdout
    tree = make_files({"pkg/__init__.py": ""})
    proc = run_cli("check", str(tree), "-m", str(m), *cache, "--fetch", "--format", "json",
                   timeout=60)
    message = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}["r1"]["message"]
    assert message.endswith("redirected to file:///C:\\evil\x1b[2J: scheme 'file' refused (https only)")
    proc = run_cli("check", str(tree), "-m", str(m), *cache, "--fetch", timeout=60)
    assert shown in proc.stdout and "\x1b" not in proc.stdout, proc.stdout


def test_a_reason_phrase_is_escaped_once(
    raw: Raw, tmp_path: Path, make_files: Callable[[dict[str, str]], Path]
) -> None:
    m = pin_manifest(tmp_path, f"{raw.url}/odd-reason")
    tree = make_files({"pkg/__init__.py": ""})
    cache = ["--cache-dir", str(tmp_path / "cache")]
    proc = run_cli("check", str(tree), "-m", str(m), *cache, "--fetch", "--format", "json",
                   timeout=60)
    message = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}["r1"]["message"]
    assert message.endswith("HTTP 404 No\\pe\x1b[2J")  # raw in JSON
    proc = run_cli("check", str(tree), "-m", str(m), *cache, "--fetch", timeout=60)
    assert "HTTP 404 No\\\\pe\\x1b[2J" in proc.stdout, proc.stdout  # once in text
    proc = run_cli("fetch", "-m", str(m), *cache, "--attempts", "1", timeout=60)
    assert proc.stdout.splitlines()[0].endswith("HTTP 404 No\\\\pe\\x1b[2J"), proc.stdout


# -- 2. one size cap for every command that reads the cache


def test_the_size_cap_is_one_setting_for_fetch_check_show_and_report(
    raw: Raw, tmp_path: Path, make_files: Callable[[dict[str, str]], Path]
) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    cache = tmp_path / "cache"
    m = pin_manifest(tmp_path, f"{raw.url}/other.py")
    big, small = str(2 * len(BODY)), str(len(BODY) // 2)
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache), "--max-bytes", big)
    assert proc.returncode == 0, proc.stdout
    assert raw.hits["/other.py"] == 1
    # check under a smaller cap: the entry is not read, and the line says how to raise it
    entry = cache / "sha256" / BODY_SHA
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache),
                   "--max-bytes", small, "--format", "json")
    assert proc.returncode == 1, proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["r1"]["status"] == "error"
    assert checks["r1"]["message"] == (
        f"<cache>/sha256/{BODY_SHA}: cached file of {len(BODY)} bytes exceeds the size cap "
        f"of {small} bytes; not read (raise the cap to at least {len(BODY)} with --max-bytes "
        "or [fetch] max_bytes in pp1audit.toml)")
    # check, show and report under the cap fetch used: the pin is read
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache), "--max-bytes", big)
    assert proc.returncode == 0, proc.stdout
    proc = run_cli("show", str(tree), "c1", "-m", str(m), "--cache-dir", str(cache),
                   "--max-bytes", big)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "# another pinned file" in proc.stdout
    proc = run_cli("report", str(tree), "-m", str(m), "--cache-dir", str(cache),
                   "--max-bytes", big)
    assert proc.returncode == 0, proc.stderr
    # fetch under the smaller cap: not downloaded again, and says why it is not usable
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache), "--max-bytes", small)
    assert proc.returncode == 2
    assert proc.stdout.splitlines()[0] == f"FAILED  r1: {checks['r1']['message']}"
    assert raw.hits["/other.py"] == 1
    # fetch under a cap that fits: already cached, no download
    proc = run_cli("fetch", "-m", str(m), "--cache-dir", str(cache))
    assert proc.returncode == 0 and "r1: already cached" in proc.stdout
    assert raw.hits["/other.py"] == 1
    assert entry.read_bytes() == BODY


# -- 4. an unusable cache is a usage error however it was named


def test_a_cache_dir_that_is_a_file_is_a_usage_error_from_the_environment(
    raw: Raw, tmp_path: Path, make_files: Callable[[dict[str, str]], Path]
) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    m = pin_manifest(tmp_path, f"{raw.url}/other.py")
    for args in (["check", str(tree)], ["fetch"]):
        proc = run_cli(*args, "-m", str(m), env={"PP1AUDIT_CACHE_DIR": str(afile)})
        assert proc.returncode == 2, proc.stdout
        assert proc.stdout == ""
        assert proc.stderr == (f"pp1audit: error: PP1AUDIT_CACHE_DIR: {afile} is not a directory; "
                               "the remote-pin cache must be a directory\n")
    assert raw.hits["/other.py"] == 0


def test_a_cache_dir_that_is_a_file_is_a_usage_error_from_the_config(
    tmp_path: Path, make_files: Callable[[dict[str, str]], Path]
) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    (tmp_path / "afile").write_text("not a directory")
    config = tmp_path / "cfg.toml"
    config.write_text('[cache]\ndir = "afile"\n')
    m = pin_manifest(tmp_path, "http://127.0.0.1:9/other.py")
    proc = run_cli("check", str(tree), "-m", str(m), "--config", str(config))
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr == (f"pp1audit: error: {config}: [cache] dir: {tmp_path / 'afile'} is not "
                           "a directory; the remote-pin cache must be a directory\n")
    # below a file, through the option too (click only checks the path itself)
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(tmp_path / "afile" / "c"))
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith(f"pp1audit: error: --cache-dir: {tmp_path / 'afile' / 'c'}: ")
    assert proc.stderr.count("\n") == 1


# -- 5. a --repo NAME given twice


def test_a_repo_name_given_twice_with_two_paths_is_a_usage_error(
    tmp_path: Path, make_files: Callable[[dict[str, str]], Path]
) -> None:
    tree = make_files({"pkg/__init__.py": ""})
    m = tmp_path / "git.yaml"
    m.write_text(dedent(f"""
        pp1audit: 1
        target: {{package: pkg}}
        sources:
          lane: {{kind: git, commit: {"a" * 40}}}
    """))
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    proc = run_cli("check", str(tree), "-m", str(m), "--repo", f"lane={one}",
                   "--repo", f"lane={two}")
    assert proc.returncode == 2
    assert proc.stderr == (f"pp1audit: error: --repo lane: given twice, as {one} and as {two}; "
                           "give each source once\n")
    # the same directory twice is no contradiction (the run goes on, to find it no clone):
    # spelled through '..' and a symlink, which pathlib does not equate
    (tmp_path / "link").symlink_to(one)
    proc = run_cli("check", str(tree), "-m", str(m), "--repo", f"lane={two}/../one",
                   "--repo", f"lane={tmp_path / 'link'}")
    assert proc.returncode == 2 and "given twice" not in proc.stderr


def test_resolve_options_merges_one_name_once(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./pp1audit.toml
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    options = resolve_options(None, ("lane=a", "lane=b/../a", "x=b"), None)
    assert set(options.repos) == {"lane", "x"} and options.repos["x"] == Path("b")
    assert os.path.realpath(options.repos["lane"]) == os.path.realpath("a")
    with pytest.raises(Pp1Error, match=r"^--repo lane: given twice, as a and as b;"):
        resolve_options(None, ("lane=a", "lane=b"), None)


def test_a_cache_that_cannot_be_written_is_named_by_no_path_in_a_check(
    raw: Raw, tmp_path: Path, make_files: Callable[[dict[str, str]], Path]
) -> None:
    """Under ``check --fetch`` a download's failure is a check's message, in a JSON
    result that must be the same bytes on every machine: the directory it could not
    write is ``<cache>/sha256``, as a cached entry is ``<cache>/sha256/<hex>``."""
    tree = make_files({"pkg/__init__.py": ""})
    cache = tmp_path / "cache"
    cache.mkdir()
    if not Path("/proc/self").is_dir():
        pytest.skip("needs /proc: a directory nobody can create a file in, root included")
    (cache / "sha256").symlink_to("/proc")  # no entry to read, and none can be written
    m = pin_manifest(tmp_path, f"{raw.url}/other.py")
    with pytest.raises(FetchError) as info:
        download(f"{raw.url}/other.py", BODY_SHA, Cache(cache), FetchPolicy(attempts=1))
    assert str(info.value).startswith("<cache>/sha256: cannot write to the cache: ")
    proc = run_cli("check", str(tree), "-m", str(m), "--cache-dir", str(cache), "--fetch",
                   "--format", "json")
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["r1"]["message"].startswith("<cache>/sha256: cannot write to the cache: ")
    assert str(cache) not in proc.stdout
