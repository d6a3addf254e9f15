"""The `codecontests` env: competitive-programming answers judged on stdin/stdout tests."""

from evalfarm.envs.codecontests.compare import normalize_output, outputs_match
from evalfarm.envs.codecontests.env import CodeContestsEnv
from evalfarm.envs.codecontests.extract import extract_code
from evalfarm.envs.codecontests.feedback import format_feedback
from evalfarm.envs.codecontests.job import MAX_CODE_CHARS, MAX_COMPLETION_CHARS, CodeContestsJob

__all__ = [
    "MAX_CODE_CHARS",
    "MAX_COMPLETION_CHARS",
    "CodeContestsEnv",
    "CodeContestsJob",
    "extract_code",
    "format_feedback",
    "normalize_output",
    "outputs_match",
]
