"""A lane-shaped git repository, built for real with gitpython.

It imitates the *shape* of the PP1 lane repository (a ``spark/remote_dspark``
package whose speculator refuses non-greedy proposals, a wire module carrying
ids/confidence/margins only, a worker applying a Markov bias then argmax), with
several commits and two branches:

    main:            base ── docs ── sampled      (sampled breaks every lane claim)
                        \\
    offload-x86host:     offload

``base`` is the pinned commit; tags ``v1`` (at base) and ``release`` (at docs)
make a fixed ref that stays and one that is recorded where it no longer points.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import git

SPECULATOR = "spark/remote_dspark/speculator.py"
WIRE = "spark/remote_dspark/wire.py"
WORKER = "spark/remote_dspark/worker/model.py"

SPECULATOR_BASE = '''\
"""Remote DSpark speculator: proposals come from the remote worker over the wire."""

from __future__ import annotations

from spark.remote_dspark import wire


class RemoteSpeculator:
    """Asks the remote worker for greedy proposals."""

    def __init__(self, config, client):
        self.config = config
        self.client = client
        self.draft_logits = None
        self.client.send(wire.HELLO)

    def check_mode(self):
        method = self.config.draft_sample_method
        if method != "greedy":
            raise NotImplementedError(
                f"remote DSpark proposals are greedy only; got {method!r}"
            )

    def propose(self, batch):
        self.check_mode()
        reply = self.client.request(wire.encode_request(batch))
        return wire.decode_proposal(reply)


class CapacitySpeculator(RemoteSpeculator):
    """Proposes within the remote capacity budget; never caches draft logits."""

    def propose(self, batch):
        proposal = super().propose(batch)
        self.draft_logits = None
        return proposal
'''

WIRE_BASE = '''\
"""The remote DSpark wire format: what travels between runner and worker."""

from __future__ import annotations

from dataclasses import dataclass

SAMPLE_GREEDY = 1
SAMPLE_PROBABILISTIC = 2

HELLO = {"version": 3, "sample": SAMPLE_GREEDY}


@dataclass(frozen=True)
class Proposal:
    """Token ids, a confidence per id and optional margins: no distribution."""

    ids: list[int]
    confidence: list[float]
    margins: list[float] | None = None


def encode_request(batch):
    return {"tokens": list(batch)}


def decode_proposal(reply):
    return Proposal(reply["ids"], reply["confidence"], reply.get("margins"))
'''

WORKER_BASE = '''\
"""Remote DSpark worker model: draft heads, Markov bias, greedy choice."""

from __future__ import annotations


def argmax(row):
    return max(range(len(row)), key=row.__getitem__)


def apply_markov_bias(row, bias, prev):
    return [x + b for x, b in zip(row, bias[prev])]


def confidence_of(row):
    top = max(row)
    return 1.0 / sum(2.718281828 ** (x - top) for x in row)


def propose_tokens(head_logits, markov_bias, prev):
    ids = []
    for row in head_logits:
        biased = apply_markov_bias(row, markov_bias, prev)
        token = argmax(biased)
        ids.append(token)
        prev = token
    confidence = [confidence_of(row) for row in head_logits]
    return ids, confidence
'''

# The breaking commit: sampled proposals everywhere.
SPECULATOR_SAMPLED = SPECULATOR_BASE.replace(
    '''        if method != "greedy":
            raise NotImplementedError(
                f"remote DSpark proposals are greedy only; got {method!r}"
            )
''', '''        self.sampled = method == "probabilistic"
''').replace(
    '''        proposal = super().propose(batch)
        self.draft_logits = None
''', '''        proposal = super().propose(batch)
        self.draft_logits = proposal.probs
''')

WIRE_SAMPLED = WIRE_BASE.replace(
    'HELLO = {"version": 3, "sample": SAMPLE_GREEDY}',
    'HELLO = {"version": 4, "sample": SAMPLE_PROBABILISTIC}',
).replace(
    '''    margins: list[float] | None = None
''', '''    margins: list[float] | None = None
    probs: list[list[float]] | None = None
''')

WORKER_SAMPLED = WORKER_BASE.replace(
    "        token = argmax(biased)",
    "        token = random.choices(range(len(biased)), weights=biased)[0]",
).replace('from __future__ import annotations\n', 'from __future__ import annotations\n\nimport random\n')

DOCS_HEADER = '''\
# Lane note: the remote overlay is greedy-only until a sampled path can carry q.
# See the PP1 probability-path audit.
'''


@dataclass(frozen=True)
class Lane:
    """The repository and the ids of its commits."""

    path: Path
    base: str
    docs: str
    sampled: str
    offload: str


def _write(root: Path, files: dict[str, str]) -> list[str]:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return list(files)


def _commit(repo: git.Repo, root: Path, files: dict[str, str], message: str, when: int) -> str:
    repo.index.add(_write(root, files))
    actor = git.Actor("Lane Tester", "lane@example.invalid")
    date = f"{when} +0000"
    commit = repo.index.commit(message, author=actor, committer=actor,
                               author_date=date, commit_date=date)
    return str(commit.hexsha)


def build_lane(root: Path) -> Lane:
    """Create the lane-shaped repository under ``root`` and return its commit ids."""
    repo = git.Repo.init(root, initial_branch="main")
    t = 1_790_000_000
    base = _commit(repo, root, {
        "spark/__init__.py": "",
        "spark/remote_dspark/__init__.py": "",
        "spark/remote_dspark/worker/__init__.py": "",
        SPECULATOR: SPECULATOR_BASE,
        WIRE: WIRE_BASE,
        WORKER: WORKER_BASE,
    }, "lane base: greedy remote DSpark", t)
    docs = _commit(repo, root, {SPECULATOR: DOCS_HEADER + SPECULATOR_BASE},
                   "docs: say why the overlay is greedy-only", t + 60)
    repo.create_tag("v1", ref=base)
    repo.create_tag("release", ref=docs)
    offload_branch = repo.create_head("offload-x86host", base)
    offload_branch.checkout()
    offload = _commit(repo, root, {"spark/remote_dspark/offload.py": "HOST = 'x86host'\n"},
                      "offload: x86 host worker", t + 120)
    repo.heads.main.checkout()
    sampled = _commit(repo, root, {
        SPECULATOR: DOCS_HEADER + SPECULATOR_SAMPLED, WIRE: WIRE_SAMPLED, WORKER: WORKER_SAMPLED,
    }, "sampled proposals", t + 180)
    repo.close()
    return Lane(root, base, docs, sampled, offload)


def dedent(text: str) -> str:
    """``textwrap.dedent`` for manifest snippets written inline in tests."""
    return textwrap.dedent(text).lstrip("\n")


# The lane as the audit words it. The audit names no lane function, class or field,
# only words: a "capacity speculator" that "sets draft_logits=None", a worker that
# "applies sequential Markov bias to each head row, then argmax", a wire that "carries
# IDs, confidence and optional margins" and no "categorical proposal distribution".
# The same claims in ordinary code with names the rules cannot know: the second base of
# the lane corpus (tests/data/lane_corpus.yaml).
WORDS_SPECULATOR = '''\
class RemoteSpeculator:
    def __init__(self, config):
        if config.draft_sample_method != "greedy":
            raise ValueError("remote DSpark supports only greedy proposals")


class RemoteCapacitySpeculator(RemoteSpeculator):
    def __init__(self, config):
        super().__init__(config)
        self.state = SpeculatorState(draft_logits=None)
'''

WORDS_WIRE = '''\
SAMPLE_GREEDY = 1
HELLO = {"version": 1, "sample": SAMPLE_GREEDY}


class Proposal:
    token_ids: list[int]
    confidence: list[float]
    margins: list[float] | None
'''

WORDS_WORKER = '''\
import torch


class DraftWorker:
    def propose(self, head_logits, prev):
        tokens = []
        for row in range(head_logits.shape[0]):
            biased = head_logits[row] + self.markov_bias(prev)
            prev = torch.argmax(biased, dim=-1)
            tokens.append(prev)
        confidence = self.confidence_head(head_logits)
        return tokens, confidence
'''

LANE_FILES = {SPECULATOR: SPECULATOR_BASE, WIRE: WIRE_BASE, WORKER: WORKER_BASE}
"""The lane-shaped repository's three claim files at its base commit."""
WORDS_FILES = {SPECULATOR: WORDS_SPECULATOR, WIRE: WORDS_WIRE, WORKER: WORDS_WORKER}
"""The same three files in the audit's words."""
