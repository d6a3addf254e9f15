"""Weight-edit answers graded in MinAtar, identical to seed 004's grader, fast and splittable."""

from evalfarm.envs.weight_edits.edits import TENSOR_SHAPES, apply_edits
from evalfarm.envs.weight_edits.env import (
    MAX_ANSWER_CHARS,
    MAX_EPISODES,
    WeightEditsEnv,
    WeightEditsJob,
    parse_job,
)
from evalfarm.envs.weight_edits.games import GAMES
from evalfarm.envs.weight_edits.grading import grade_answer
from evalfarm.envs.weight_edits.split import merge_results, split_job

__all__ = [
    "GAMES",
    "MAX_ANSWER_CHARS",
    "MAX_EPISODES",
    "TENSOR_SHAPES",
    "WeightEditsEnv",
    "WeightEditsJob",
    "apply_edits",
    "grade_answer",
    "merge_results",
    "parse_job",
    "split_job",
]
