"""Validation of the relative, POSIX paths that manifests and sources use (and URLs).

One function decides what a safe logical path is, so the manifest validator and
every source reject the same things: absolute paths, ``..``, empty segments,
backslashes and NUL bytes. Symlink escapes are a property of a concrete tree and
are checked by the directory source after resolving.
"""

from __future__ import annotations


def path_problem(path: str) -> str | None:
    """Return why ``path`` is not a safe relative POSIX path, or None when it is."""
    if not path:
        return "empty path"
    if "\x00" in path:
        return "path contains a NUL byte"
    if "\\" in path:
        return "path contains a backslash; use '/'"
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return "absolute path; paths are relative to the target root"
    parts = path.split("/")
    if any(p == ".." for p in parts):
        return "path contains '..'; paths must stay inside the target root"
    if any(p in ("", ".") for p in parts):
        return "path has an empty or '.' segment"
    return None


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be parsed (``http://[::1``, a port out of range), or None.

    The standard library reports these as a bare ``ValueError`` when the URL is
    first used. One check for the manifest (a manifest error with line:column),
    for a download and for a redirect's Location (that pin's one-line error).
    """
    from urllib.parse import urlsplit

    try:
        _ = urlsplit(url).port
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    return None
