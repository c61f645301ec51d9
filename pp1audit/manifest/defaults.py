"""Where the shipped default manifest lives inside the installed package."""

from __future__ import annotations

from pathlib import Path


def default_manifest_path() -> Path:
    """Path of the PP1 manifest that ships in ``pp1audit/data/``."""
    return Path(__file__).parent.parent / "data" / "pp1.yaml"
