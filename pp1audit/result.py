"""Plain result records: what every check returns and what formatters read.

Checks produce ``Check`` records and never print; the CLI combines them into a
``Result`` and asks it for the verdict. Keeping these as frozen dataclasses means
a formatter cannot alter what was measured, and the JSON contract (design.md) is
a direct rendering of these fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Status(StrEnum):
    """Outcome of one check (contract: see design.md)."""

    PASS = "pass"
    DRIFT = "drift"
    STALE = "stale"
    """A claim's evidence is no longer found in the form its rules describe: it may
    still hold, but a person must look again. Closes the gate, reads unlike fail."""
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


STATUS_ORDER = (Status.PASS, Status.DRIFT, Status.STALE, Status.FAIL, Status.SKIP, Status.ERROR)


@dataclass(frozen=True)
class Check:
    """One judged item: a pin, a citation, an invariant, a provenance record."""

    id: str
    kind: str
    status: Status
    message: str
    path: str | None = None
    lines: tuple[int, int] | None = None
    found_lines: tuple[int, int] | None = None
    expected: str | None = None
    actual: str | None = None
    source: str | None = None
    """Which source the check read ("target" or a named git/remote source)."""
    excerpt: str | None = None
    """The text now at ``found_lines`` (or ``lines``), for reports; not in JSON."""
    places: int = 1
    """How many equally good places an anchor matched (the nearest was chosen):
    ``pin`` refuses to guess between several; not in JSON."""


@dataclass(frozen=True)
class TargetInfo:
    """What was audited: kind (directory/wheel/git), location and what it says it is."""

    kind: str
    location: str
    package: str
    version: str | None


@dataclass(frozen=True)
class GatePolicy:
    """Which statuses close the gate besides ``fail`` and ``error``."""

    allow_drift: bool = False
    require_all: bool = False

    def closes(self, status: Status) -> bool:
        """True when a check with this status closes the gate under this policy."""
        if status in (Status.FAIL, Status.STALE, Status.ERROR):
            return True
        if status is Status.DRIFT:
            return not self.allow_drift
        if status is Status.SKIP:
            return self.require_all
        return False


@dataclass(frozen=True)
class Result:
    """A whole run: the manifest and target identities and every check, in manifest order."""

    manifest_path: str
    manifest_sha256: str
    target: TargetInfo | None
    checks: tuple[Check, ...]
    policy: GatePolicy = field(default_factory=GatePolicy)
    tool_version: str = ""

    def counts(self) -> dict[str, int]:
        """Number of checks per status, every status present (zero included)."""
        out = {s.value: 0 for s in STATUS_ORDER}
        for check in self.checks:
            out[check.status.value] += 1
        return out

    @property
    def gate_open(self) -> bool:
        """True when no check closes the gate under ``policy``."""
        return not any(self.policy.closes(c.status) for c in self.checks)

    @property
    def verdict(self) -> str:
        """``"pass"`` when the gate is open, else ``"fail"`` (contract)."""
        return "pass" if self.gate_open else "fail"
