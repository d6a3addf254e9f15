"""Statuses, their codes and precedence; limits and their validation."""

from __future__ import annotations

import pytest

from evalfarm.sandbox import MAX_LIMITS, PRECEDENCE, Limits, Status, worst


def test_codes_match_the_contract() -> None:
    codes = {status.value: status.code for status in Status}
    assert codes == {
        "ok": 0, "wrong_answer": 1, "timeout": 2, "syntax_error": 3, "runtime_error": 5,
        "infra_error": 6, "memory_limit": 7, "output_limit": 8, "parse_error": 9, "invalid_job": 10,
        "judge_error": 11,
    }  # fmt: skip


def test_precedence_covers_every_status_once() -> None:
    assert sorted(PRECEDENCE, key=lambda s: s.code) == sorted(Status, key=lambda s: s.code)


def test_worst_takes_the_first_by_precedence() -> None:
    assert worst([Status.OK, Status.WRONG_ANSWER, Status.TIMEOUT]) is Status.TIMEOUT
    assert worst([Status.WRONG_ANSWER, Status.INFRA_ERROR]) is Status.INFRA_ERROR
    assert worst([]) is Status.OK


def test_only_infra_error_is_infra() -> None:
    assert [s for s in Status if s.is_infra] == [Status.INFRA_ERROR]


def test_limits_merge_overrides_and_keeps_types() -> None:
    merged = Limits().merged({"wall_s": 2, "memory_mb": 64.0})
    assert merged.wall_s == 2.0 and isinstance(merged.wall_s, float)
    assert merged.memory_mb == 64 and isinstance(merged.memory_mb, int)
    assert merged.cpu_s == Limits().cpu_s


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"nope": 1}, "limits.nope: unknown limit"),
        ({"wall_s": "1"}, "limits.wall_s: must be a number"),
        ({"wall_s": True}, "limits.wall_s: must be a number"),
        ({"memory_mb": 0}, "limits.memory_mb: must be in"),
        ({"cpu_s": MAX_LIMITS.cpu_s + 1}, "limits.cpu_s: must be in"),
        ([1, 2], "limits: must be an object"),
    ],
)
def test_bad_limits_name_the_field(overrides: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Limits().merged(overrides)  # type: ignore[arg-type]
