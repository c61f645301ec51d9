"""Where a run's config file is: ``--config FILE``, else ``./pp1audit.toml`` when there.

One lookup for the two places that need it: the CLI, which validates the file
before any command runs, and ``runconfig``, which reads it for provenance. It is
its own module, importing nothing of the package, so that a plain ``check`` (no
provenance) finds the file without importing ``runconfig`` and the cache and
HTTP code behind it.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_NAME = "pp1audit.toml"
"""The config file looked for in the working directory when ``--config`` is not given."""


def config_file(given: Path | None) -> Path | None:
    """The run's config file: ``given`` (``--config``), else ``./pp1audit.toml`` when
    anything is there, else None. ``lexists``, not ``isfile``: a directory, FIFO,
    device link or dangling link named so is the loader's to refuse, as ``--config``
    naming it would be, never a file silently passed over."""
    if given is not None:
        return given
    return Path(CONFIG_NAME) if os.path.lexists(CONFIG_NAME) else None
