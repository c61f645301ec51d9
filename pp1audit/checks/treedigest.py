r"""The tree digest: one SHA-256 that pins every file of a package at once.

Which files: every entry below ``<package>/`` (paths relative to the target
root, so they start with ``<package>/``), except anything inside a
``__pycache__`` directory (bytecode is written by the installer and by Python
itself, and is judged by the bytecode check instead). The ``*.dist-info``
directory is not part of it either (installers add ``INSTALLER``,
``REQUESTED``, ``direct_url.json`` and rewrite ``RECORD``). So the digest of an
installed tree and of the wheel it came from are identical.

Exact byte format (this is the contract a manifest's ``target.tree_sha256``
pins). For each entry, sorted by the UTF-8 bytes of its path, one line::

    <lowercase hex SHA-256 of the content>  <path>\n

— two spaces, as ``sha256sum`` prints. Paths containing a backslash, a
newline or a carriage return are written the way GNU ``sha256sum`` (coreutils
9) writes them: the line starts with ``\``, and in the path ``\`` becomes
``\\``, a newline ``\n`` and a carriage return ``\r``. An entry that
is not a regular file has ``<type>:<detail>`` in place of the hex digest
(``symlink:<target>``, ``FIFO:``, ``socket:``, ``device:``); it is never opened.
The tree digest is the SHA-256 of the concatenated lines, in hex.

So, on an installed tree without special files, this reproduces it::

    cd site-packages && find vllm -name __pycache__ -prune -o -type f -print0 \
      | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum

The startup digest (``target.startup_sha256``) pins the code that runs at
every interpreter start, and what decides it, in the same byte format: one line
per file of the shadowing check's startup set (``ShadowReport.startup``: every
``.pth`` ``site`` reads, path lines only or not, every ``sitecustomize`` /
``usercustomize`` found, the files of the modules a vouched ``.pth`` imports,
every module in the directory of the audited distribution's console scripts
(``bin/torch.py``: first on ``sys.path`` when one runs), the console scripts
themselves (every file the audited distribution's RECORD lists in
``<prefix>/bin``: ``bin/vllm``, what ``vllm serve`` runs), and a venv's
``pyvenv.cfg``; ``__pycache__`` left to the bytecode check as above), sorted by
the UTF-8 bytes of the path *as the report shows it*: relative to the target
root for its own files, and for files outside it as RECORD names them
(``../../../pyvenv.cfg``, ``../../../bin/torch.py``, so a venv moved elsewhere
keeps its digest); the full path for a base site-packages'
(``/usr/lib/python3.11/site-packages/x.pth``). A ``pyvenv.cfg``'s token is not
the file's hash, whose ``home``, ``executable`` and ``command`` lines name the
host, but the SHA-256 of what it decides about startup, the same on every
host: ``include-system-site-packages = true\n`` or ``= false\n`` as ``site``
reads that file (absent is true); a symbolic link's is ``symlink:<target>``
(never opened; the shadowing check fails it). A console script's token is
``script:<hex>`` when its ``#!`` header names an interpreter in the target's
prefix: the SHA-256 of the file with that header in a canonical form,
``#!<prefix>/bin/python\n`` (``script_header``: the host's path left out, the
interpreter it names kept), else the file's hex SHA-256; ``missing:`` when
RECORD lists it and it is not there, a link's or special file's as above
(never followed or opened); one whose directory leads out of the prefix is not
read. A wheel, or a directory not laid out as ``<prefix>/lib/pythonX.Y/site-packages``,
has no scripts directory: nothing is added there.
RECORD vouching cannot anchor these files, since whoever writes
site-packages can write a ``*.dist-info`` too; the pin can. A file the audit
does not open (a hook outside the site directory or inside a zip, which the
shadowing check fails anyway) leaves the digest uncomputable, like an
unreadable file in the tree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pp1audit.sources.hashing import Digest
from pp1audit.sources.inventory import FILE, SYMLINK, UNREADABLE, Entry


def in_tree(path: str, package: str) -> bool:
    """True for the paths the tree digest covers (see the module docstring)."""
    return path.startswith(package + "/") and "__pycache__" not in path.split("/")


@dataclass(frozen=True)
class TreeDigest:
    """The digest, and the per-file lines it was computed from (to explain a mismatch)."""

    sha256: str | None
    files: int
    unreadable: list[str]
    """Files that could not be read (or, in the startup set, were not opened): the
    digest is then None."""


def line_for(path: str, token: str) -> bytes:
    """One line of the digest input (escaped like GNU sha256sum)."""
    if "\\" in path or "\n" in path or "\r" in path:
        escaped = path.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        return ("\\" + token + "  " + escaped + "\n").encode("utf-8", "surrogateescape")
    return (token + "  " + path + "\n").encode("utf-8", "surrogateescape")


def token_for(entry: Entry, digest: Digest | None) -> str | None:
    """The hex digest of a regular file, ``<type>:<detail>`` otherwise; None if unreadable."""
    if entry.kind == FILE:
        if digest is None or digest.sha256 is None:
            return None
        return digest.sha256.hex()
    if entry.kind == SYMLINK:
        return f"symlink:{entry.link or ''}"
    if entry.kind == UNREADABLE:  # what it holds, or is, is unknown: so is the digest
        return None
    return f"{entry.kind}:"


def path_order(path: str) -> bytes:
    """The sort key of both digests: the path's UTF-8 bytes (undecodable names kept)."""
    return path.encode("utf-8", "surrogateescape")


def listing_digest(tokens: Iterable[tuple[str, str | None]]) -> TreeDigest:
    """The digest of ``(path, token)`` pairs in the format above: sorted by
    ``path_order``, one ``line_for`` each; a None token (a file not read) makes
    the digest None and is named in ``unreadable``. The startup digest is this
    over ``ShadowReport.startup_files()``."""
    chosen = sorted(tokens, key=lambda pair: path_order(pair[0]))
    h = hashlib.sha256()
    unreadable = []
    for path, token in chosen:
        if token is None:
            unreadable.append(path)
            continue
        h.update(line_for(path, token))
    return TreeDigest(None if unreadable else h.hexdigest(), len(chosen), unreadable)


def tree_digest(entries: Iterable[Entry], digests: dict[str, Digest], package: str) -> TreeDigest:
    """Compute the tree digest over ``entries`` (those outside the tree are ignored)."""
    return listing_digest((e.path, token_for(e, digests.get(e.path)))
                          for e in entries if in_tree(e.path, package))


SCRIPT_HEAD = 16 << 10
"""The bytes of a console script read before its ``#!`` header is judged: the
interpreter's path is at most ``PATH_MAX`` (4,096) bytes, quoted, in pip's longest form."""

PREFIX_MARK = b"<prefix>"
"""What the target's prefix is written as in a console script's canonical header."""

MISSING = "missing:"
"""The token of a console script the RECORD lists that is not there."""

_SH_HEAD = b"#!/bin/sh\n'''exec' "
_SH_TAIL = b' "$0" "$@"\n' + b"' '''\n"  # distlib ends the header with a line break
_UNSAFE = (b" ", b"\t", b"\r", b"\n", b"\v", b"\f", b"\0")
_UNSAFE_QUOTED = (b'"', b"$", b"`", b"\\", b"\n", b"\r", b"\0")
_SH_PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@%=~#") \
    | frozenset(range(128, 256))
"""The bytes an unquoted word holds that the shell takes literally (no glob, quote or expansion)."""


def script_header(head: bytes, prefixes: Iterable[bytes],
                  aliases: Mapping[bytes, bytes] | None = None) -> tuple[bytes, int] | None:
    r"""A console script's ``#!`` header in canonical form, and its length in
    ``head`` (the file's first bytes), when the interpreter it names is in the
    target's prefix (spelled as one of ``prefixes``, absolute, no trailing
    ``/``); None otherwise.

    pip writes the interpreter it ran under, so the header names the host's
    path, and two identical venvs at different paths would differ by it. The
    canonical header is ``#!<prefix>/bin/python\n``: the prefix written
    ``<prefix>``, the rest of the interpreter's path (``bin/python``,
    ``bin/python3``) kept, so a script pointed at another interpreter still
    changes the digest; ``aliases`` maps the venv's other names of its one
    interpreter (``/bin/python3.11`` when it is the same file as
    ``bin/python``) to ``/bin/python``, as ``python3 -m pip`` writes its name.
    Both of pip's forms (distlib's ``_build_shebang``) are read: ``#!<exe>\n``,
    and, for a path over 127 bytes or with a space,
    ``#!/bin/sh\n'''exec' <exe> "$0" "$@"\n' '''\n`` (``<exe>`` maybe in double
    quotes), which runs the same interpreter on the same file, so a venv at a
    long path shares the digest too. Only an unambiguous header is read so: in
    the first form no white space in ``<exe>`` (the kernel would split it); in
    the second no quote, ``$``, backquote or backslash (the shell would expand
    them), and unquoted nothing the shell reads as other than itself."""
    exe: bytes | None = None
    size = 0
    if head.startswith(_SH_HEAD):
        end = head.find(_SH_TAIL, len(_SH_HEAD))
        word = head[len(_SH_HEAD):end] if end >= 0 else b""
        if len(word) > 1 and word[:1] == word[-1:] == b'"':
            word = word[1:-1]
        elif not all(c in _SH_PLAIN for c in word):
            word = b""
        if word and not any(c in word for c in _UNSAFE_QUOTED):
            exe, size = word, end + len(_SH_TAIL)
    elif head.startswith(b"#!"):
        end = head.find(b"\n")
        word = head[2:end] if end >= 0 else b""
        if word and not any(c in word for c in _UNSAFE):
            exe, size = word, end + 1
    if exe is None:
        return None
    for prefix in sorted(set(prefixes), key=len, reverse=True):
        if prefix.startswith(b"/") and exe.startswith(prefix.rstrip(b"/") + b"/"):
            rest = exe[len(prefix.rstrip(b"/")):]
            return b"#!" + PREFIX_MARK + (aliases or {}).get(rest, rest) + b"\n", size
    return None


def script_token(chunks: Iterable[bytes], prefixes: Iterable[bytes],
                 aliases: Mapping[bytes, bytes] | None = None) -> str:
    """A console script's token in the startup digest, from its content (``chunks``,
    the first at least ``SCRIPT_HEAD`` bytes unless the file is shorter).

    When its header names an interpreter in the target's prefix
    (``script_header``): ``script:<hex>``, the SHA-256 of the canonical header
    followed by the rest of the file, so identical venvs at different paths
    share it; the ``script:`` keeps that apart from the plain SHA-256 a file
    holding those bytes literally would have (its ``#!<prefix>/…`` is a path
    relative to wherever it is run from). Any other file (no ``#!``; one naming
    an interpreter outside the prefix, as a venv copied elsewhere still does):
    the hex SHA-256 of its bytes, a file's token as everywhere."""
    it = iter(chunks)
    head = next(it, b"")
    header = script_header(head, prefixes, aliases)
    h = hashlib.sha256()
    if header is None:
        h.update(head)
    else:
        h.update(header[0])
        h.update(head[header[1]:])
    for chunk in it:
        h.update(chunk)
    return h.hexdigest() if header is None else "script:" + h.hexdigest()
