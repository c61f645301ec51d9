"""Atomic file output: a reader sees the old file or the whole new one, never half.

Results, reports and manifests are written to a temporary file in the same
directory, flushed and fsynced, then renamed over the destination (and the
directory fsynced, so the rename survives a crash); on any error, Ctrl-C,
SIGTERM or SIGHUP (the CLI turns both into an exception that unwinds) the
temporary file is removed, so a failed run leaves nothing behind. Only SIGKILL
(or a power cut) can leave one: its name says whose it is,
``.<name>.pp1audit-<tag>-<pid>-<random>.tmp`` (``<tag>``: host name and PID
namespace; a name too long for that is ``.pp1audit-<hash of name>-<tag>-…``), and
the next write to the same destination removes those of this host and namespace
whose process is gone and that are older than ``STALE_TEMP``. A destination that is a
symlink is followed (the link stays a link; a loop of links is refused, as there
is no file to replace), and an existing file keeps its mode; a new one gets the
usual 0666 less the umask.

A destination that is a stream (``/dev/stdout``, ``/dev/null``, a FIFO, a
terminal, bash's ``>(…)``) is written to directly: renaming over it would
replace the device or FIFO with a regular file (as root, ``-o /dev/null``
would destroy ``/dev/null``). A FIFO nobody reads is refused rather than
waited on; a directory or a block device is refused.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import sys
import tempfile
import time
from pathlib import Path

from pp1audit.errors import Pp1Error
from pp1audit.fdio import write_all
from pp1audit.sources.safeio import realpath


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _stream_kind(path: Path) -> str | None:
    """What ``path`` is when it must not be replaced: 'stream', 'refuse: <why>', or None
    for a regular file (or nothing yet) that can be replaced atomically."""
    try:
        st = os.stat(path)  # follows links, /proc/self/fd/N included
    except OSError as exc:
        # A symlink loop has no file to replace: ``realpath`` gives the link back,
        # and the rename would replace the link with a regular file.
        return f"refuse: {exc.strerror}" if exc.errno == errno.ELOOP else None
    if stat.S_ISDIR(st.st_mode):
        return "refuse: is a directory"
    if stat.S_ISBLK(st.st_mode):
        return "refuse: is a block device"
    if not stat.S_ISREG(st.st_mode):
        return "stream"  # character device, FIFO, socket
    # /dev/stdout and friends redirected to a file: write through the open file.
    return "stream" if str(path).startswith(("/dev/std", "/dev/fd/", "/proc/")) else None


def _inherited_fd(path: Path) -> int | None:
    """The descriptor ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N`` or
    ``/proc/self/fd/N`` names: written to as it is (reopening would truncate a
    ``>> log`` that stdout appends to, and would lose its position)."""
    text = str(path)
    named = {"/dev/stdout": 1, "/dev/stderr": 2}.get(text)
    if named is not None:
        return named
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return int(text[len(prefix):])
    return None


def _write_stream(path: Path, blob: bytes) -> None:
    fd = _inherited_fd(path)
    if fd is not None:
        try:
            sys.stdout.flush()  # what was printed before stays before
            write_all(fd, blob)
        except OSError as exc:
            raise Pp1Error(f"{path}: cannot write: {exc.strerror}") from None
        return
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | (os.O_TRUNC if stat.S_ISREG(os.stat(path).st_mode) else 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise Pp1Error(f"{path}: cannot write: a FIFO that no process is reading") from None
        raise Pp1Error(f"{path}: cannot write: {exc.strerror}") from None
    try:
        os.set_blocking(fd, True)  # O_NONBLOCK was only for the open of a FIFO
        write_all(fd, blob)
    except OSError as exc:
        raise Pp1Error(f"{path}: cannot write: {exc.strerror}") from None
    finally:
        os.close(fd)


STALE_TEMP = 600.0
"""Seconds after which a dead writer's temporary file may be removed (as fetch's
``.part`` files): the tag and the PID say whose it is, the age keeps a live writer's
file safe where they cannot (a PID namespace that another host's shares)."""

NAME_MAX = 255
"""Longest file name, in bytes, where the file system does not say (``pathconf``)."""

_RANDOM_AND_SUFFIX = 8 + len(".tmp")
"""What ``mkstemp`` adds to a prefix: 8 random characters and the suffix."""


def _pid_namespace() -> str:
    """The identity of this process's PID namespace (the inode of
    ``/proc/self/ns/pid``), or "" where there is none to read."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


def _writer_tag() -> str:
    """Eight hex digits naming this host and PID namespace: a PID says whether a
    writer is alive only on the host and in the namespace where it ran (a
    container may share the host name, and a directory, with the host or with
    another container, while its PIDs name other processes)."""
    who = f"{os.uname().nodename}\0{_pid_namespace()}"
    return hashlib.sha256(who.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _name_hash(name: str) -> str:
    return hashlib.sha256(os.fsencode(name)).hexdigest()[:16]


def temp_prefix(name: str, name_max: int = NAME_MAX) -> str:
    """The start of a temporary file's name for destination ``name``; ``mkstemp``
    adds 8 random characters and ``.tmp``. Tag and PID say who writes it. When
    the whole would exceed ``name_max`` bytes (a destination name of 200-odd
    bytes), the name is replaced by its hash: a write that fits the directory
    must not fail for its temporary file's name."""
    tail = f"pp1audit-{_writer_tag()}-{os.getpid()}-"
    full = f".{name}.{tail}"
    if len(os.fsencode(full)) + _RANDOM_AND_SUFFIX <= name_max:
        return full
    return f".{tail.replace('pp1audit-', f'pp1audit-{_name_hash(name)}-', 1)}"


def _name_max(directory: Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return NAME_MAX


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (another user's too); unsure is alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        return True
    return True


def remove_stale_temps(directory: Path, name: str, older_than: float = STALE_TEMP) -> list[str]:
    """Remove what writers of ``directory/name`` killed by SIGKILL left: regular files
    named exactly as ``temp_prefix`` names them on this host and in this PID
    namespace (either form), owned by this user, last written more than
    ``older_than`` seconds ago, whose writer PID no longer exists. Anything else (a
    live writer's file, a recent one, another user's, host's or namespace's, a
    symlink, a name that merely looks alike) is left alone; a file that cannot be
    removed is left too, the write goes on. Returns the names removed."""
    tail = re.escape(f"{_writer_tag()}-") + r"([0-9]{1,10})-[a-z0-9_]{8}\.tmp"
    forms = [re.compile(re.escape(f".{name}.pp1audit-") + tail),
             re.compile(re.escape(f".pp1audit-{_name_hash(name)}-") + tail)]
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        m = next((m for form in forms if (m := form.fullmatch(entry.name))), None)
        if m is None or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() \
                    and now - st.st_mtime > older_than:
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            continue
    return removed


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` atomically; one-line ``Pp1Error`` on failure."""
    blob = data.encode("utf-8") if isinstance(data, str) else data
    kind = _stream_kind(path)
    if kind is not None and kind.startswith("refuse: "):
        raise Pp1Error(f"{path}: cannot write: {kind.removeprefix('refuse: ')}")
    if kind == "stream":
        _write_stream(path, blob)
        return
    target = Path(realpath(path)) if os.path.islink(path) else path
    directory = target.parent if str(target.parent) else Path(".")
    mode = _mode_for(target)
    remove_stale_temps(directory, target.name)
    try:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target.name, _name_max(directory)),
                                   suffix=".tmp", dir=directory)
    except OSError as exc:
        raise Pp1Error(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise Pp1Error(f"{path}: cannot write: {exc.strerror}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # not every file system lets a directory be fsynced
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
