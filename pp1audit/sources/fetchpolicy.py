"""The limits of one download, apart from the downloader.

``check`` resolves its run options (``runconfig``) on every run, fetching or not;
the options carry these limits. Kept out of ``download`` so that reading them
does not import the downloader, its deadline watchdog and its error wording
(~7 ms at every start of ``check``)."""

from __future__ import annotations

from dataclasses import dataclass

from pp1audit.sources.cache import MAX_BYTES


@dataclass(frozen=True)
class FetchPolicy:
    """Limits of one download. Defaults suit patches and source files."""

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    max_bytes: int = MAX_BYTES
    attempts: int = 3
    """Tries in all (1 = no retry); only 5xx answers and connection errors are retried."""
    backoff: float = 0.5
    """First wait between tries; doubled each time."""
    total_timeout: float = 120.0
    """Seconds for the whole download, tries and redirects included."""
