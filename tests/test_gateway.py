"""The HTTP gateway against a real farm, called by real HTTP clients as their systems call them.

A private Redis, a worker node, and `evalfarm gateway` in its own process on a free port. ELM's
calls are made exactly as OpenELM's client makes them (`requests.post(..., json=..., timeout=...)`,
then `Sodaracer(**json.loads(resp.text))` with OpenELM's own class); verl's `sandbox_fusion` reward
code is verl's own file; OpenRLHF's request is the shape its remote reward client posts.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import foreign_clients
import pytest
import requests
from farm_support import ROOT, worker_env

from evalfarm.workers.embedded import GatewayProcess, NodeProcess, RedisServer, free_port

pytestmark = [pytest.mark.integration, pytest.mark.sandbox, pytest.mark.timeout(300)]

ELM_TIMEOUT_S = 5.0  # OpenELM's EnvConfig.timeout: the run's limit and the HTTP client's timeout


class Farm:
    """Redis, one node and a gateway; `url` is the gateway's."""

    def __init__(self, directory: str, **gateway_env: str) -> None:
        self.redis = RedisServer(directory=directory).start()
        env = worker_env(EVALFARM_WARM_SANDBOX="1")
        self.node = NodeProcess(self.redis.url, ["--concurrency", "2"], env).start()
        self.gateway = GatewayProcess(self.redis.url, free_port(), worker_env(**gateway_env)).start()
        self.gateway.wait_ready(60)
        self.url = self.gateway.url
        deadline = time.monotonic() + 60
        while requests.get(f"{self.url}/v1/health", timeout=5).status_code != 200:
            assert time.monotonic() < deadline, "the farm did not become healthy"
            time.sleep(0.2)

    def close(self) -> None:
        self.gateway.stop(grace_s=10)
        self.node.stop(grace_s=10)
        self.redis.close()


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    running = Farm(str(tmp_path_factory.mktemp("gateway")))
    try:
        # Both fork servers of each slot up, so no test's first request waits for one to start.
        for code in ("print(1)", "import numpy\nprint(1)") * 2:
            requests.post(f"{running.url}/run_code", json={"code": code, "language": "python"}, timeout=60)
        yield running
    finally:
        running.close()


def gen_racer(url: str, code: Any, timeout: float = ELM_TIMEOUT_S) -> requests.Response:
    """The call OpenELM's Sodarace environment makes (`generate_programs`)."""
    return requests.post(f"{url}/gen_racer", json={"code": code, "timeout": timeout}, timeout=timeout)


# -- ELM / OpenELM ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", list(foreign_clients.sodarace_seeds()))
def test_openelm_seed_programs_become_sodaracers(farm: Farm, seed: str) -> None:
    code = foreign_clients.sodarace_seeds()[seed]
    walker, valid = foreign_clients.openelm_walker(code)  # what OpenELM's own library builds and says
    resp = gen_racer(farm.url, code)
    if not valid:  # two of OpenELM's seeds (galloper, runner) have muscles stronger than its limit
        assert resp.status_code == 500
        assert resp.json() == {"message": "Invalid walker", "walker": walker, "unsafe_execute_error_code": 1}
        return
    assert resp.status_code == 200, resp.text
    Sodaracer = foreign_clients.sodaracer_class()
    racer = Sodaracer(**json.loads(resp.text))
    assert racer.valid  # OpenELM's own check: its Box2D simulation of the walker ran
    assert racer.program_str == code
    assert racer.result_obj == walker


SQUARE = foreign_clients.sodarace_seeds()["square"]
WALKER_HEAD = "from openelm.environments.sodaracer.walker import walker_creator\n"


@pytest.mark.parametrize(
    ("code", "timeout", "body"),
    [
        (
            "def make_walker(:\n    pass",
            5.0,
            {"message": "Failed sandbox_unsafe_execute", "unsafe_execute_error_code": "EXCEPTION"},
        ),
        (
            "def make_walker():\n    return 1 +\n",
            5.0,
            {"message": "Failed sandbox_unsafe_execute", "unsafe_execute_error_code": "SYNTAX_ERROR"},
        ),
        (
            "def make_walker():\n    return len(5)",
            5.0,
            {"message": "Failed sandbox_unsafe_execute", "unsafe_execute_error_code": "TYPE_ERROR"},
        ),
        (
            "def make_walker():\n    raise ValueError('no')",
            5.0,
            {"message": "Failed sandbox_unsafe_execute", "unsafe_execute_error_code": "EXCEPTION"},
        ),
        (
            "import time\ndef make_walker():\n    time.sleep(5)",
            1.0,
            {"message": "Failed sandbox_unsafe_execute", "unsafe_execute_error_code": "TIMEOUT_EXCEPTION"},
        ),
        (
            "walker = 3",
            5.0,
            {"message": "Failed sandbox_unsafe_execute", "unsafe_execute_error_code": "EXCEPTION"},
        ),
        (
            "def make_walker():\n    return {'joints': []}",
            5.0,
            {"message": "Not walker", "unsafe_execute_error_code": 1},
        ),
    ],
    ids=["not-a-function", "syntax", "type-error", "exception", "timeout", "no-def", "not-walker"],
)
def test_gen_racer_errors_are_openelms(farm: Farm, code: str, timeout: float, body: dict[str, Any]) -> None:
    resp = requests.post(f"{farm.url}/gen_racer", json={"code": code, "timeout": timeout}, timeout=30)
    assert (resp.status_code, resp.json()) == (500, body)


def test_an_invalid_walker_is_answered_with_it(farm: Farm) -> None:
    code = WALKER_HEAD + (
        "def make_walker():\n    wc = walker_creator()\n    a, b = wc.add_joint(0, 0), wc.add_joint(1, 1)\n"
        "    wc.add_muscle(a, b, 11.0, 0.0)\n    return wc.get_walker()\n"
    )
    resp = gen_racer(farm.url, code)
    assert resp.status_code == 500
    assert resp.json() == {
        "message": "Invalid walker",
        "walker": {
            "joints": [[0.0, -0.0], [0.22, -0.22]],
            "muscles": [[0, 1, {"type": "muscle", "amplitude": 11.0, "phase": 0.0}]],
        },
        "unsafe_execute_error_code": 1,
    }


def test_a_list_of_codes_answers_a_list_of_bodies_in_order(farm: Farm) -> None:
    codes = [SQUARE, "def make_walker():\n    return 2", "def make_walker(:"]
    resp = gen_racer(farm.url, codes, timeout=30)
    assert resp.status_code == 200
    bodies = resp.json()
    assert [set(b) for b in bodies] == [
        {"program_str", "result_obj"},
        {"message", "unsafe_execute_error_code"},
        {"message", "unsafe_execute_error_code"},
    ]
    assert bodies[1]["message"] == "Not walker" and bodies[2]["unsafe_execute_error_code"] == "EXCEPTION"


def test_image_and_p3_routes_return_reprs_as_openelm(farm: Farm) -> None:
    import numpy as np

    draw = "import numpy as np\ndef draw():\n    return np.arange(12, dtype=float).reshape(2, 2, 3)"
    resp = requests.post(
        f"{farm.url}/eval_imageoptim_func",
        json={"code": draw, "func_name": "draw", "timeout": 5.0},
        timeout=5.0,
    )
    assert resp.status_code == 200
    assert resp.json()["result_obj"] == repr(np.arange(12, dtype=float).reshape(2, 2, 3).tolist())
    not_image = requests.post(
        f"{farm.url}/eval_imageoptim_func",
        json={"code": "def draw():\n    return [1]", "func_name": "draw", "timeout": 5.0},
        timeout=5.0,
    )
    assert (not_image.status_code, not_image.json()) == (
        500,
        {"message": "Not image", "unsafe_execute_error_code": 1},
    )
    # OpenELM's P3 client sends no func_name: the last function the code defines is called.
    p3 = "def helper(x):\n    return x\ndef g6():\n    return (helper(i) for i in range(3))"
    resp = requests.post(f"{farm.url}/eval_p3_solution", json={"code": p3, "timeout": 1.0}, timeout=5.0)
    assert (resp.status_code, resp.json()) == (200, {"program_str": p3, "result_obj": repr([0, 1, 2])})


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"{not json", "not valid JSON"), (b'{"timeout": 5}', "code: Field required"), (b'{"code": 5}', "code")],
)
def test_malformed_elm_requests_are_400_in_elms_shape(farm: Farm, data: bytes, message: str) -> None:
    resp = requests.post(
        f"{farm.url}/gen_racer", data=data, headers={"Content-Type": "application/json"}, timeout=5
    )
    assert resp.status_code == 400
    assert set(resp.json()) == {"message", "unsafe_execute_error_code"} and message in resp.json()["message"]


def test_concurrent_elm_requests_are_served(farm: Farm) -> None:
    # OpenELM's own server fails under threads (its SIGALRM timer); this one serves them together.
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(lambda _: gen_racer(farm.url, SQUARE, timeout=30), range(32)))
    assert [r.status_code for r in replies] == [200] * 32


# -- SandboxFusion, as verl's reward calls it -----------------------------------------------------

ADD = {"inputs": ["1 2\n", "10 -3\n", "0 0\n"], "outputs": ["3\n", "7\n", "0\n"]}


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("a, b = map(int, input().split())\nprint(a + b)", [True, True, True]),
        ("a, b = map(int, input().split())\nprint(a - b)", [False, False, True]),
        ("a, b = map(int, input().split())\nprint(a // (b - b))", [-2, -2, -2]),
        ("import time\ntime.sleep(3)", [-3, -3, -3]),
    ],
    ids=["correct", "wrong", "runtime-error", "timeout"],
)
def test_verls_own_client_scores_a_codecontests_problem(
    farm: Farm, program: str, expected: list[Any]
) -> None:
    sandbox_fusion = foreign_clients.verl_sandbox_fusion()
    results, metadata = sandbox_fusion.utils.check_correctness(
        f"{farm.url}/run_code", ADD, program, timeout=1
    )
    assert results == expected, metadata
    score, _ = sandbox_fusion.compute_score(
        f"{farm.url}/run_code", None, 1024, f"```python\n{program}\n```", ADD, timeout=1
    )
    assert score == sum(r is True for r in expected) / 3


NO_LOADER = (
    'extern const char i[];\n__attribute__((used, section(".interp"))) const char i[] = "/no/loader";\n'
)
CPP_ADD = "#include <iostream>\nint main() { int a, b; std::cin >> a >> b; std::cout << %s << '\\n'; }\n"


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        (CPP_ADD % "a + b", [True, True, True]),
        (CPP_ADD % "a - b", [False, False, True]),
        (CPP_ADD % "a / (b - b)", [-2, -2, -2]),
        ("#include <unistd.h>\nint main() { sleep(30); }\n", [-3, -3, -3]),
        ("int main() { return undefined_name; }\n", [-4, -4, -4]),
        # A build naming a missing ELF interpreter: the program's runtime error, not a 504 to retry.
        (NO_LOADER + CPP_ADD % "a + b", [-2, -2, -2]),
    ],
    ids=["correct", "wrong", "runtime-error", "timeout", "compile-error", "build-will-not-execute"],
)  # fmt: skip
def test_verls_own_client_scores_a_cpp_answer(farm: Farm, program: str, expected: list[Any]) -> None:
    sandbox_fusion = foreign_clients.verl_sandbox_fusion()
    results, metadata = sandbox_fusion.utils.check_correctness(
        f"{farm.url}/run_code", ADD, program, timeout=5, language="cpp"
    )
    assert results == expected, metadata
    if expected[0] == -4:
        assert metadata[0]["status"] == "compile_error" and "undefined_name" in metadata[0]["compile_stderr"]


@pytest.mark.parametrize("language", ["rust", "go", "java", "nodejs"])  # the ones verl's client sends
def test_verls_own_client_scores_every_language(farm: Farm, language: str) -> None:
    from test_languages import COMPILED, PROGRAMS

    from evalfarm.sandbox import languages

    own = languages.canonical(language)
    if own not in languages.installed():
        pytest.skip(f"no {own} toolchain on this machine")
    sandbox_fusion = foreign_clients.verl_sandbox_fusion()
    check = sandbox_fusion.utils.check_correctness
    for behaviour, expected in (("sum", [True, True, True]), ("wrong", [False, False, True])):
        results, metadata = check(
            f"{farm.url}/run_code", ADD, PROGRAMS[own][behaviour], timeout=10, language=language
        )
        assert results == expected, (behaviour, metadata)
    results, metadata = check(
        f"{farm.url}/run_code", ADD, PROGRAMS[own]["syntax"], timeout=10, language=language
    )
    if own in COMPILED:
        assert results == [-4, -4, -4] and metadata[0]["status"] == "compile_error", metadata
    else:  # SandboxFusion runs JavaScript uncompiled: its syntax error is the run's, as there
        assert results == [-2, -2, -2] and "SyntaxError" in metadata[0]["stderr"], metadata


@pytest.mark.parametrize("language", ["c", "javascript", "pypy3"])  # SandboxFusion's other names
def test_run_code_runs_the_other_languages_sandbox_fusion_names(farm: Farm, language: str) -> None:
    from test_languages import PROGRAMS

    from evalfarm.sandbox import languages

    own = languages.canonical(language)
    if own not in languages.installed():
        pytest.skip(f"no {own} toolchain on this machine")
    body = {"code": PROGRAMS[own]["sum"], "language": language, "stdin": "40 2\n"}
    answer = requests.post(f"{farm.url}/run_code", json=body, timeout=60).json()
    assert (answer["status"], answer["run_result"]["stdout"]) == ("Success", "42\n"), answer


def test_run_code_compiles_cpp_once_per_slot_not_per_request(farm: Farm) -> None:
    body = {"code": CPP_ADD % "a * b" + "// once per slot\n", "language": "cpp", "compile_timeout": 60}
    answers = [
        requests.post(f"{farm.url}/run_code", json={**body, "stdin": f"{i} 3\n"}, timeout=120).json()
        for i in range(6)
    ]
    assert [a["run_result"]["stdout"] for a in answers] == [f"{3 * i}\n" for i in range(6)]
    assert all(a["status"] == "Success" and a["compile_result"]["return_code"] == 0 for a in answers)
    compiles = [a for a in answers if a["compile_result"]["execution_time"] > 0]
    assert 1 <= len(compiles) <= 2  # the node has two slots; a per-request API would compile six times
    broken = requests.post(f"{farm.url}/run_code", json={**body, "code": "int main( {"}, timeout=120).json()
    assert (broken["status"], broken["run_result"]) == ("Failed", None)
    assert set(broken["compile_result"]) == {"status", "execution_time", "return_code", "stdout", "stderr"}
    assert (broken["compile_result"]["status"], broken["compile_result"]["return_code"]) == ("Finished", 1)
    assert "error" in broken["compile_result"]["stderr"]


def test_run_code_answers_in_sandbox_fusions_shape(farm: Farm) -> None:
    import base64

    files = {"data/in.txt": base64.b64encode(b"hello").decode()}
    code = "print(open('data/in.txt').read()[::-1])\nopen('out.txt', 'w').write('done')"
    body = {"code": code, "language": "python", "files": files, "fetch_files": ["out.txt", "nope.txt"]}
    resp = requests.post(f"{farm.url}/run_code", json=body, timeout=30).json()
    assert set(resp) == {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
    assert (resp["status"], resp["compile_result"], resp["files"]) == (
        "Success",
        None,
        {"out.txt": "ZG9uZQ=="},
    )
    assert set(resp["run_result"]) == {"status", "execution_time", "return_code", "stdout", "stderr"}
    assert (
        resp["run_result"]["status"],
        resp["run_result"]["return_code"],
        resp["run_result"]["stdout"],
    ) == ("Finished", 0, "olleh\n")
    # SandboxFusion's programs write /mnt/<file> too: a run's /mnt is its own, inside its /tmp
    mnt = {"code": "open('/mnt/b', 'w').write('sauce')", "language": "python", "fetch_files": ["/mnt/b"]}
    resp = requests.post(f"{farm.url}/run_code", json=mnt, timeout=30).json()
    assert (resp["status"], resp["files"]) == ("Success", {"/mnt/b": base64.b64encode(b"sauce").decode()})
    outside = {"code": "pass", "language": "python", "fetch_files": ["/etc/passwd"]}
    refused = requests.post(f"{farm.url}/run_code", json=outside, timeout=30)
    assert "/etc/passwd" in refused.text and "is not a relative path" in refused.text
    syntax = requests.post(
        f"{farm.url}/run_code", json={"code": "def f(:", "language": "python"}, timeout=30
    ).json()
    assert (syntax["status"], syntax["run_result"]["status"], syntax["run_result"]["return_code"]) == (
        "Failed",
        "Finished",
        1,
    )
    assert "SyntaxError" in syntax["run_result"]["stderr"]
    other = requests.post(f"{farm.url}/run_code", json={"code": "x", "language": "php"}, timeout=30)
    assert (
        other.status_code == 200
        and other.json()["status"] == "SandboxError"
        and "php" in other.json()["message"]
    )
    unknown = requests.post(f"{farm.url}/run_code", json={"code": "x", "language": "cobol"}, timeout=30)
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["language"]


# -- OpenRLHF's remote reward model --------------------------------------------------------------

PROBLEM = {
    "id": "add",
    "public_tests": [],
    "hidden_tests": [{"input": i, "output": o} for i, o in zip(ADD["inputs"], ADD["outputs"], strict=True)],
}
PROMPT = "<|im_start|>user\nAdd two numbers.<|im_end|>\n<|im_start|>assistant\n"


def test_openrlhf_remote_reward_scores_each_query(farm: Farm) -> None:
    label = json.dumps({"env": "codecontests", "problem": PROBLEM})
    right = "```python\na, b = map(int, input().split())\nprint(a + b)\n```<|im_end|>"
    wrong = "```python\nprint(0)\n```<|im_end|>"
    data = {"query": [PROMPT + right, PROMPT + wrong], "prompts": [PROMPT, PROMPT], "labels": [label, label]}
    resp = requests.post(f"{farm.url}/get_reward", json=data, timeout=180)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["rewards"] == [1.0, 0.0] and body["scores"] == [1.0, 0.0]
    assert body["extra_logs"]["passed"] == [3.0, 0.0] and body["extra_logs"]["total"] == [3.0, 3.0]
    assert body["extra_logs"]["masked"] == [0.0, 0.0]
    # A label that is no job template masks its own sample; when no label is one, the request is 400.
    one_bad = requests.post(
        f"{farm.url}/get_reward", json={**data, "labels": ["not json", label]}, timeout=60
    )
    assert one_bad.status_code == 200 and one_bad.json()["rewards"] == [0.0, 0.0]
    assert one_bad.json()["extra_logs"]["masked"] == [1.0, 0.0]
    bad = requests.post(f"{farm.url}/get_reward", json={**data, "labels": ["not json"] * 2}, timeout=30)
    assert bad.status_code == 400 and "labels" in bad.json()["error"]


# -- the farm's faults: after its own retries, what each client can take -----------------------------


def test_a_fault_the_farm_could_not_heal_is_504_for_verl_and_a_mask_for_openrlhf(farm: Farm) -> None:
    import math

    import chaos_support

    slow = "import time\ntime.sleep(2)\nprint(1)"
    assert farm.node.proc is not None
    with chaos_support.killing_runs_older_than(
        0.5, farm.node.proc.pid
    ):  # every try dies, as by an OOM killer
        resp = requests.post(f"{farm.url}/run_code", json={"code": slow, "language": "python"}, timeout=120)
        assert resp.status_code == 504 and resp.json()["status"] == "SandboxError"
        # The farm is up (a live node): the sample is masked, not the request failed (503 is for a
        # farm with no live node: tests/test_batch_masking.py).
        data = {"query": [slow], "prompts": [""], "labels": [json.dumps({"env": "program"})]}
        resp = requests.post(f"{farm.url}/get_reward", json=data, timeout=120)
        assert resp.status_code == 200 and resp.json()["rewards"] == [0.0]
        assert math.isnan(resp.json()["scores"][0]) and resp.json()["extra_logs"]["infra_error"] == [1.0]


# -- the native routes -----------------------------------------------------------------------------


def test_native_score_in_order_and_streamed(farm: Farm) -> None:
    jobs = [
        {"id": "slow", "env": "program", "code": "import time\ntime.sleep(0.5)\nprint('slow')"},
        {"id": "fast", "env": "program", "code": "print('fast')"},
        {"id": "bad", "env": "no-such-env"},
    ]
    resp = requests.post(f"{farm.url}/v1/score", json={"jobs": jobs}, timeout=60)
    assert [(r["id"], r["status"]) for r in resp.json()["results"]] == [
        ("slow", "ok"),
        ("fast", "ok"),
        ("bad", "invalid_job"),
    ]
    streamed = requests.post(
        f"{farm.url}/v1/score",
        json={"jobs": jobs},
        headers={"Accept": "application/x-ndjson"},
        timeout=60,
        stream=True,
    )
    lines = [json.loads(line) for line in streamed.iter_lines() if line]
    assert sorted(line["index"] for line in lines) == [0, 1, 2]
    assert lines[-1]["id"] == "slow"  # as they complete: the slow job last


def test_a_programs_nan_or_lone_surrogate_is_written_not_a_500(farm: Farm) -> None:
    # Values and messages a program chose: Python's JSON (NaN, escaped surrogates), as the CLI writes.
    jobs = [
        {
            "id": "nan",
            "env": "call",
            "code": "def f():\n    return [float('nan'), float('inf')]",
            "func_name": "f",
        },
        {"id": "surrogate", "env": "call", "code": "def f():\n    return chr(0xD800)", "func_name": "f"},
        {
            "id": "raised",
            "env": "call",
            "code": "def f():\n    raise ValueError(chr(0xD800))",
            "func_name": "f",
        },
    ]
    resp = requests.post(f"{farm.url}/v1/score", json={"jobs": jobs}, timeout=60)
    assert resp.status_code == 200
    nan, surrogate, raised = resp.json()["results"]
    assert str(nan["result"]) == "[nan, inf]" and surrogate["result"] == "\ud800"
    assert raised["status"] == "runtime_error" and "\ud800" in raised["error"]


def test_a_request_posted_again_while_it_is_scored_is_not_scored_twice(farm: Farm, tmp_path: Path) -> None:
    # A client that times out and posts the same request again (OpenRLHF's, verl's) waits on the
    # first one's jobs: each job runs once, and both requests get its result.
    log = tmp_path / "runs.log"
    jobs = [
        {"id": f"again-{i}", "env": "sleepy", "sleep_s": 1.0, "value": i, "runs_log": str(log)}
        for i in range(2)
    ]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        first = pool.submit(requests.post, f"{farm.url}/v1/score", json={"jobs": jobs}, timeout=60)
        time.sleep(0.3)  # the first is being scored
        second = pool.submit(requests.post, f"{farm.url}/v1/score", json={"jobs": jobs}, timeout=60)
        answers = [first.result().json()["results"], second.result().json()["results"]]
    assert [[r["status"] for r in results] for results in answers] == [["ok", "ok"], ["ok", "ok"]]
    assert sorted(log.read_text().split()) == ["again-0", "again-1"]  # one run each
    again = requests.post(f"{farm.url}/v1/score", json={"jobs": jobs[:1]}, timeout=60).json()["results"]
    assert again[0]["status"] == "ok" and len(log.read_text().split()) == 3  # once done, it runs anew


def test_health_and_metrics(farm: Farm) -> None:
    health = requests.get(f"{farm.url}/v1/health", timeout=5)
    assert health.status_code == 200 and health.json()["nodes"] == 1 and health.json()["processes"] == 2
    from evalfarm.sandbox import languages

    assert health.json()["languages"] == sorted(languages.offered(cgroups=os.geteuid() == 0))  # advertised
    requests.post(f"{farm.url}/v1/score", data=b"{", timeout=5)
    text = requests.get(f"{farm.url}/metrics", timeout=5).text
    assert 'evalfarm_gateway_requests_total{code="400",route="/v1/score"}' in text
    assert (
        "evalfarm_gateway_request_duration_seconds_bucket" in text
        and "evalfarm_gateway_requests_in_flight" in text
    )


def test_concurrent_requests_share_batches(farm: Farm) -> None:
    def batches() -> float:
        for line in requests.get(f"{farm.url}/metrics", timeout=5).text.splitlines():
            if line.startswith("evalfarm_gateway_batch_jobs_count"):
                return float(line.split()[-1])
        return 0.0

    before = batches()
    job = {"env": "program", "code": "import time\ntime.sleep(0.05)\nprint(1)"}
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        replies = list(
            pool.map(
                lambda i: requests.post(
                    f"{farm.url}/v1/score", json={"jobs": [{"id": f"c{i}", **job}]}, timeout=60
                ),
                range(64),
            )
        )
    assert all(r.json()["results"][0]["status"] == "ok" for r in replies)
    assert batches() - before < 48  # 64 requests rode fewer batches


# -- safe by default --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    settings = {
        "EVALFARM_GATEWAY_TOKEN": "s3cret",
        "EVALFARM_GATEWAY_MAX_BODY_BYTES": "4096",
        "EVALFARM_GATEWAY_MAX_JOBS": "3",
    }
    running = Farm(str(tmp_path_factory.mktemp("guarded")), **settings)
    yield running
    running.close()


def test_a_token_is_required_and_can_ride_the_url(guarded: Farm) -> None:
    job = {"jobs": [{"id": "a", "env": "program", "code": "print(1)"}]}
    assert requests.post(f"{guarded.url}/v1/score", json=job, timeout=30).status_code == 401
    assert (
        requests.post(
            f"{guarded.url}/v1/score", json=job, headers={"Authorization": "Bearer nope"}, timeout=30
        ).status_code
        == 401
    )
    assert (
        requests.post(
            f"{guarded.url}/v1/score", json=job, headers={"Authorization": "Bearer s3cret"}, timeout=30
        ).status_code
        == 200
    )
    assert requests.post(f"{guarded.url}/v1/score?token=s3cret", json=job, timeout=30).status_code == 200
    # A client that only joins paths (OpenELM's f"{sandbox_server}/gen_racer") puts it in the prefix.
    assert gen_racer(f"{guarded.url}/t/s3cret", SQUARE, timeout=30).status_code == 200
    assert requests.get(f"{guarded.url}/v1/health", timeout=5).status_code == 200  # open: no job runs


def test_caps_answer_413_with_the_cap(guarded: Farm) -> None:
    auth = {"Authorization": "Bearer s3cret"}
    big = requests.post(
        f"{guarded.url}/v1/score",
        json={"jobs": [{"id": "x", "env": "program", "code": "#" * 5000}]},
        headers=auth,
        timeout=30,
    )
    assert big.status_code == 413 and "4096" in big.json()["error"]
    many = requests.post(
        f"{guarded.url}/v1/score", json={"jobs": [{"id": str(i)} for i in range(4)]}, headers=auth, timeout=30
    )
    assert many.status_code == 413 and "cap is 3" in many.json()["error"]
    elm = requests.post(
        f"{guarded.url}/gen_racer", json={"code": ["x"] * 4, "timeout": 1}, headers=auth, timeout=30
    )
    assert elm.status_code == 413 and set(elm.json()) == {"message", "unsafe_execute_error_code"}


def test_binding_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    env = {k: v for k, v in worker_env().items() if k != "EVALFARM_GATEWAY_TOKEN"}
    command = [
        sys.executable,
        "-m",
        "evalfarm.workers.cli",
        "gateway",
        "--broker",
        "redis://127.0.0.1:1/0",
        "--host",
        "0.0.0.0",
    ]
    completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2
    assert "EVALFARM_GATEWAY_TOKEN" in completed.stderr and "Traceback" not in completed.stderr


def test_up_serves_the_gateway(tmp_path: Path) -> None:
    port = free_port()
    env = worker_env(EVALFARM_WARM_SANDBOX="0")
    command = [sys.executable, "-m", "evalfarm.workers.cli", "up", "--workers", "1", "--http", str(port)]
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) as up:
        assert up.stdout is not None
        lines = [up.stdout.readline() for _ in range(3)]
        assert lines[2] == f"http:    http://127.0.0.1:{port}\n", lines
        jobs = {"jobs": [{"id": "a", "env": "program", "code": "print(2 + 2)"}]}
        resp = requests.post(f"http://127.0.0.1:{port}/v1/score", json=jobs, timeout=60)
        assert resp.json()["results"][0]["stdout"] == "4\n"
        up.send_signal(signal.SIGTERM)
        assert up.wait(60) == 0
