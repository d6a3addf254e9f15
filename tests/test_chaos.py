"""The fault-injection suite: every fault a cluster meets, injected mid-batch into a real farm.

Each scenario (`chaos_support.SCENARIOS`) scores a batch of sandboxed programs with known output on
a fresh private Redis and real `evalfarm worker` nodes, all with the default settings (the
visibility timeout included: a dead node's work must come back through its heartbeat), and kills
something once a third of the results are in, or cuts a node's network link (a node in a network
namespace of its own, `netns_support`; the scenario also checks the node works again once the link
heals, and that it put back no live node's messages). Every job must come back exactly once with its
fault-free result; only a job whose every try is killed may come back infra_error. Run alone with
`pytest -m chaos`; `bench/chaos.py` prints the same scenarios as a table.
"""

from __future__ import annotations

import chaos_support
import pytest
from netns_support import Network

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(420)]

JOBS = 150
# Far below the visibility timeout (1,200 s), which is all that brought a dead node's work back before.
HEALED_WITHIN_S = 120


@pytest.mark.parametrize("scenario", [s for s in chaos_support.SCENARIOS if s != "same_job_every_try"])
def test_a_fault_of_the_farm_changes_no_result(scenario: str) -> None:
    if scenario.startswith("partition") and (why := Network.available()):
        pytest.skip(why)
    row = chaos_support.run_scenario(scenario, JOBS)
    assert (row.lost, row.dup, row.wrong, row.infra) == (0, 0, 0, 0), row
    assert row.seconds < HEALED_WITHIN_S, row
    if "restored" in row.note:
        assert "not within" not in row.note, row
    if scenario == "redis_pause":
        assert row.reruns == 0, row  # no live node's message was put back while Redis was paused


def test_a_fault_hitting_the_same_job_on_every_try_makes_only_that_job_infra_error() -> None:
    row = chaos_support.run_scenario("same_job_every_try", JOBS)
    assert (row.lost, row.dup, row.wrong) == (0, 0, 0), row
    assert row.infra_ids == ["slow"], row
