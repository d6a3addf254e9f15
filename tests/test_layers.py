"""The layers point one way: the sandbox and the envs never pull in queue or metrics code."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN = ("celery", "redis", "kombu", "prometheus_client")


@pytest.mark.parametrize(
    "module", ["sandbox", "envs", "envs.program", "envs.codecontests", "envs.humaneval", "envs.call"]
)
def test_module_imports_no_queue_or_metrics_code(module: str) -> None:
    probe = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout)
    assert [name for name in loaded if name.split(".")[0] in FORBIDDEN] == []


def test_probe_detects_a_forbidden_import() -> None:
    probe = "import json, sys, celery; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout)
    assert "celery" in loaded
