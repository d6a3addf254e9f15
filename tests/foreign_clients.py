"""The real clients of foreign systems, loaded for tests: OpenELM's Sodaracer, verl's sandbox_fusion,
OpenRLHF's remote reward client and its rollout loop.

The packages are installed without their dependencies (`tests/clients-requirements.txt`, by `make
setup`): they pull in torch, transformers, ray, vLLM and more, which the parts used here do not
need. OpenELM's package `__init__` imports all of it, so its package is entered without running that
file, and the two modules the Sodarace module imports but never uses here (the language model, the
local executor) are stood in for. verl's `sandbox_fusion` needs only `requests`: its two files are
loaded directly, as verl's own reward code imports them. OpenRLHF's packages are entered the same
way; its agent module needs only aiohttp, and its rollout module (`samples_generator`) gets Ray's
three calls over plain values (a reference is its value) and a stand-in for the vLLM names it
imports but the rollout loop does not use.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any


def _installed(package: str) -> Path:
    """Where an installed package's files are (found, not imported)."""
    for entry in sys.path:
        candidate = Path(entry or ".") / package
        if (candidate / "__init__.py").is_file():
            return candidate
    raise ModuleNotFoundError(f"{package} is not installed (make setup installs it)")


def openelm_root() -> Path:
    """Where the installed OpenELM package lives."""
    return _installed("openelm")


def sodaracer_class() -> Any:
    """OpenELM's `Sodaracer` genotype (which builds a Box2D simulation of the walker it is given)."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    if "openelm" not in sys.modules:
        package = types.ModuleType("openelm")
        package.__path__ = [str(openelm_root())]
        sys.modules["openelm"] = package
        unused = {
            "openelm.mutation_model": {"MutationModel": object},
            "openelm.utils.code_eval": {"pool_exec_processes": None},
        }
        for name, attributes in unused.items():
            module = types.ModuleType(name)
            module.__dict__.update(attributes)
            sys.modules[name] = module
    import warnings

    argv, sys.argv = sys.argv, sys.argv[:1]  # OpenELM's Box2D framework parses the command line
    try:
        with warnings.catch_warnings():
            # Box2D's SWIG module warns while it initialises, and crashes if that warning is an error.
            warnings.simplefilter("ignore")
            from openelm.environments.sodaracer.sodarace import Sodaracer
    finally:
        sys.argv = argv
    return Sodaracer


def sodarace_seeds() -> dict[str, str]:
    """OpenELM's shipped Sodarace seed programs, by name: their text, as files."""
    walker = openelm_root() / "environments" / "sodaracer" / "walker"
    names = ["square", "radial", "wheel", "galloper", "runner", "CPPN_fixed", "CPPN_mutable"]
    return {name: (walker / f"{name}.py").read_text() for name in names}


def openelm_walker(code: str) -> tuple[Any, bool]:
    """What OpenELM's own library makes of a program: `make_walker().to_dict()` as JSON sees it, and
    whether its `validate()` accepts the walker."""
    import json

    sodaracer_class()  # the package, entered
    namespace: dict[str, Any] = {}
    exec(compile(code, "<seed>", "exec"), namespace)
    walker = namespace["make_walker"]()
    return json.loads(json.dumps(walker.to_dict(), default=lambda value: value.tolist())), walker.validate()


def verl_sandbox_fusion() -> Any:
    """verl's `verl.utils.reward_score.sandbox_fusion` (`compute_score`, `utils.check_correctness`)."""
    directory = _installed("verl") / "utils" / "reward_score" / "sandbox_fusion"
    name = "verl_sandbox_fusion"
    if name in sys.modules:
        return sys.modules[name]
    package_spec = importlib.util.spec_from_file_location(
        name, directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
    assert package_spec is not None and package_spec.loader is not None
    module = importlib.util.module_from_spec(package_spec)
    sys.modules[name] = module
    package_spec.loader.exec_module(module)
    return module


def _enter(name: str, path: Path) -> None:
    """A package as a module with its path, its `__init__` not run."""
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [str(path)]
        sys.modules[name] = package


def openrlhf_agent() -> Any:
    """OpenRLHF's `openrlhf.utils.agent`: `SingleTurnAgentExecutor`, whose `execute` posts each
    sample to the remote reward model and reads `rewards`, `scores` and `extra_logs` back."""
    root = _installed("openrlhf")
    _enter("openrlhf", root)
    _enter("openrlhf.utils", root / "utils")
    import importlib

    return importlib.import_module("openrlhf.utils.agent")


class LocalRay:
    """Ray's `wait`, `get` and `cancel` over plain values: a reference is its own value."""

    @staticmethod
    def wait(
        refs: list[Any], num_returns: int = 1, timeout: float | None = None
    ) -> tuple[list[Any], list[Any]]:
        return refs[:num_returns], refs[num_returns:]

    @staticmethod
    def get(ref: Any) -> Any:
        return ref

    @staticmethod
    def cancel(ref: Any) -> None:
        pass


def openrlhf_rollouts() -> Any:
    """OpenRLHF's `openrlhf.trainer.ppo_utils.samples_generator` (`SamplesGenerator`: the rollout
    loop, its dynamic filtering, `_process_response_into_experience`) and, through it, `Experience`."""
    name = "openrlhf.trainer.ppo_utils.samples_generator"
    if name in sys.modules:
        return sys.modules[name]
    root = _installed("openrlhf")
    openrlhf_agent()
    _enter("openrlhf.trainer", root / "trainer")
    _enter("openrlhf.trainer.ppo_utils", root / "trainer" / "ppo_utils")
    engine = types.ModuleType("openrlhf.trainer.ray.vllm_engine")
    engine.__dict__["batch_vllm_engine_call"] = None  # wakes and sleeps engines: none here
    ray = types.ModuleType("ray")
    ray.__dict__.update(wait=LocalRay.wait, get=LocalRay.get, cancel=LocalRay.cancel)
    vllm = types.ModuleType("vllm")
    vllm.__dict__["SamplingParams"] = types.SimpleNamespace
    stand_ins = {"ray": ray, "vllm": vllm, "openrlhf.trainer.ray": types.ModuleType("openrlhf.trainer.ray"),
                 "openrlhf.trainer.ray.vllm_engine": engine}  # fmt: skip
    saved = {key: sys.modules.get(key) for key in stand_ins}
    sys.modules.update(stand_ins)  # for this import only: the module keeps them, nothing else sees them
    try:
        import importlib

        return importlib.import_module(name)
    finally:
        for key, module in saved.items():
            if module is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = module
