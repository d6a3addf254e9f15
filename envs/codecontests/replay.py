"""Whose fault a judge's failure is: a checker or interactor that fails while judging a program is
run again without that program, and only a judge that fails there too is `judge_error`.

A checker is replayed with the test's expected answer as the output; an interactor with the problem's
own correct solution (`problem.solutions`) when it carries one, else with no program at all (a peer
that never writes and never closes its side). A judge that judges the replay without failing
(it accepts the answer, rejects it cleanly, or waits for a program to speak) failed because of what
the program wrote, or because it stopped: the program's `wrong_answer`. The replays never involve
the program, so nothing it does can make a judge look faulty.

The outcome of a replay depends only on the judge and the test (and, for a solution, the limits), so
it is kept per worker process, keyed by their hash: a problem pays for a replay once, and only when
its judge fails (the common path never replays).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib

# How a judge did on a replay. `failed` alone proves the judge faulty without the program.
ACCEPTED, REJECTED, WAITED, FAILED = "accepted", "rejected", "waited", "failed"
AGAINST = {  # what a judge is replayed with, as messages name it
    "answer": "the test's expected answer",
    "solution": "the problem's own solution",
    "silence": "no program at all",
}
CLEAN = {  # a replay the judge went through without failing
    ACCEPTED: "it accepts {against}",
    REJECTED: "it judges {against} without failing",
    WAITED: "with {against} it waits, without failing",
}


@dataclasses.dataclass(frozen=True)
class Replay:
    """One replay of a failed judge: with what (`answer`, `solution`, `silence`), how the judge did,
    and whether the outcome came from this worker's cache."""

    against: str
    outcome: str
    cached: bool = False

    def entry(self) -> dict[str, object]:
        """What a result says of it (in `judge.tests`)."""
        return {"with": self.against, "reference": self.outcome, "cached": self.cached}


class ReplayCache:
    """Replay outcomes by key, the most recent `size` of them (an LRU of short strings)."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._outcomes: collections.OrderedDict[str, str] = collections.OrderedDict()

    @staticmethod
    def key(*parts: str | bytes) -> str:
        """The key of a replay: a hash of what decides its outcome (the judge, the test, ...)."""
        digest = hashlib.sha256()
        for part in parts:
            data = part.encode("utf-8") if isinstance(part, str) else part
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
        return digest.hexdigest()

    def get(self, key: str) -> str | None:
        """The outcome kept for `key`, or None."""
        outcome = self._outcomes.get(key)
        if outcome is not None:
            self._outcomes.move_to_end(key)
        return outcome

    def put(self, key: str, outcome: str) -> None:
        """Keep `outcome` for `key`, forgetting the oldest beyond the cache's size."""
        self._outcomes[key] = outcome
        self._outcomes.move_to_end(key)
        while len(self._outcomes) > self.size:
            self._outcomes.popitem(last=False)


REPLAYS = ReplayCache()  # this worker process's: a pool process scores its jobs one at a time


def summary(replays: list[tuple[str, int, Replay]]) -> dict[str, object]:
    """A result's `judge`: that its judge was replayed, the worst outcome of its replays (`failed`,
    then `rejected`, `waited`, `accepted`), and each replay by test (`public` or `hidden`, 1-based)."""
    outcomes = {replay.outcome for _, _, replay in replays}
    worst = next(outcome for outcome in (FAILED, REJECTED, WAITED, ACCEPTED) if outcome in outcomes)
    tests = [{"test": f"{kind} {number}", **replay.entry()} for kind, number, replay in replays]
    return {"replayed": True, "reference": worst, "tests": tests}
