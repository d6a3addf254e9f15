"""Distribution: one answer's episodes split into ranges graded apart, merged bit for bit.

Episodes are independent (each has its own environment and seeds), so any partition of the range
grades to the same per-episode scores. A part's result carries its per-episode scores and lengths;
the merge concatenates them in episode order and takes the means over the full lists, as the
reference's `np.mean` does, so the merged reward and metadata equal the whole job's exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalfarm.envs.base import InvalidJob
from evalfarm.envs.weight_edits import grading
from evalfarm.envs.weight_edits.env import parse_job
from evalfarm.result import Result
from evalfarm.status import Status, worst


def split_job(job: Mapping[str, Any], parts: int) -> list[dict[str, Any]]:
    """Up to `parts` sub-jobs, each with an `episode_range` [start, stop); sizes differ by at most one.

    A job that cannot be split (malformed) comes back alone and unchanged, so grading it reports
    the problem and `merge_results` passes that result through.
    """
    try:
        whole = parse_job(job).selected
    except InvalidJob:
        return [dict(job)]
    count = max(1, min(parts, len(whole)))
    size, extra = divmod(len(whole), count)
    sub_jobs = []
    start = whole.start
    for index in range(count):
        stop = start + size + (index < extra)
        sub_job = dict(job)
        sub_job.update({"id": f"{job.get('id')}#{start}-{stop}", "episode_range": [start, stop]})
        sub_jobs.append(sub_job)
        start = stop
    return sub_jobs


def _merge_failed(job: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The whole job's result when a part did not grade: the part of the worst status."""
    status = worst([Status(result["status"]) for result in results])
    chosen = next(result for result in results if result["status"] == status.value)
    merged = {key: value for key, value in chosen.items() if not key.startswith("episode_")}
    merged["id"] = job.get("id")
    return merged


def merge_results(job: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The result `job` would have given whole, from the results of its `split_job` parts."""
    if not results:
        raise ValueError("merge_results needs at least one result")
    if len(results) == 1 and "episode_range" not in results[0]:
        return dict(results[0])  # the job was not split
    if any(result.get("status") != Status.OK.value for result in results):
        return _merge_failed(job, results)
    if any("episode_range" not in result for result in results):
        raise ValueError("merge_results needs the results of split_job parts (with episode_range)")
    ordered = sorted(results, key=lambda result: result["episode_range"][0])
    whole = parse_job(job).selected
    covered = [bound for result in ordered for bound in result["episode_range"]]
    if covered[0] != whole.start or covered[-1] != whole.stop or covered[1:-1:2] != covered[2:-1:2]:
        raise ValueError(f"the parts do not cover episodes [{whole.start}, {whole.stop}) exactly once")
    return _merge_ok(job, ordered, whole)


def _merge_ok(job: Mapping[str, Any], ordered: Sequence[Mapping[str, Any]], whole: range) -> dict[str, Any]:
    scores = [score for result in ordered for score in result["episode_scores"]]
    lengths = [length for result in ordered for length in result["episode_lengths"]]
    first = ordered[0]["metadata"]
    parsed = grading.Parsed({}, first["edit_count"], first["nonzero_weights"])
    reward, metadata = grading.summarize(
        first["game"], first["source"], first["episodes"], parsed, scores, lengths
    )
    merged = Result.of(job.get("id"), job.get("env"), Status.OK, reward, None, metadata=metadata)
    for key in ("env_version", "limits"):
        if key in ordered[0]:
            merged[key] = ordered[0][key]
    if "run_s" in ordered[0]:  # the compute the parts spent together, not the elapsed time
        merged["run_s"] = round(sum(result.get("run_s", 0.0) for result in ordered), 6)
    if "episode_range" in job:
        merged.update(
            {"episode_range": [whole.start, whole.stop], "episode_scores": scores, "episode_lengths": lengths}
        )
    return merged
