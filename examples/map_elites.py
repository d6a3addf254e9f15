"""A MAP-Elites loop whose solutions are programs, scored by the farm: Sodarace-style walkers.

Each solution is a program built from a template (OpenELM's walker API: `walker_creator`) by a
genome: structure (how many legs, whether the body is braced) and constants (body size, leg length
and spread, muscle amplitude and phase). Every generation mutates elites of the archive (or draws
random genomes while it is empty), sends the whole generation through the farm's `elm` env (the
programs run sandboxed; each returns its walker, validated by the walker API's own rule), and
inserts what came back into a pyribs `GridArchive`: behaviour = the walker's width and height,
fitness = its actuation (the share of its muscles' total length that is actuated, weighted by
amplitude: a stand-in for the distance a physics engine would measure, which runs elsewhere).

    .venv/bin/python examples/map_elites.py                  # an embedded farm, started here
    .venv/bin/python examples/map_elites.py --broker redis://HOST:6379/0 --generations 50 --plot archive.png
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
import time
from typing import Any

import numpy as np
from ribs.archives import GridArchive

from evalfarm import Farm
from evalfarm.workers.embedded import broker_or_embedded

# genome: legs, brace, body width, body height, leg length, leg spread, amplitude, phase step
LOW = np.array([1, 0, 2.0, 2.0, 1.0, 0.0, 0.0, 0.0])
HIGH = np.array([6, 1, 20.0, 20.0, 15.0, 6.0, 12.0, 3.2])
MEASURE_RANGES = [(0.0, 6.0), (0.0, 8.0)]  # width, height of the body (OpenELM scales by 0.22)

TEMPLATE = """from openelm.environments.sodaracer.walker import walker_creator
import math


def make_walker():
    wc = walker_creator()
    body = [wc.add_joint(0, 0), wc.add_joint({w:.3f}, 0)]
    body += [wc.add_joint({w:.3f}, {h:.3f}), wc.add_joint(0, {h:.3f})]
    for a, b in zip(body, body[1:] + body[:1]):
        wc.add_muscle(a, b)
{brace}    for k in range({legs}):
        x = {w:.3f} * (k + 0.5) / {legs}
        foot = wc.add_joint(x + {spread:.3f} * math.cos(k), -{leg:.3f})
        wc.add_muscle(body[1 if x > {w:.3f} / 2 else 0], foot, {amp:.3f}, {phase:.3f} * k)
        wc.add_muscle(body[0 if x > {w:.3f} / 2 else 1], foot)
    return wc.get_walker()
"""


def program(genome: np.ndarray) -> str:
    """The walker program a genome stands for."""
    legs, brace, w, h, leg, spread, amp, phase = genome
    braced = (
        "    wc.add_muscle(body[0], body[2])\n    wc.add_muscle(body[1], body[3])\n" if brace >= 0.5 else ""
    )
    constants = {"w": w, "h": h, "leg": leg, "spread": spread, "amp": amp, "phase": phase}
    return TEMPLATE.format(legs=math.floor(legs + 0.5), brace=braced, **constants)


def random_genomes(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.uniform(LOW, HIGH, size=(n, len(LOW)))


def mutate(parents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Constants moved by Gaussian noise; now and then a leg more or fewer, the brace toggled."""
    children = parents + rng.normal(0.0, 0.08, parents.shape) * (HIGH - LOW)
    children[:, 0] = parents[:, 0] + rng.choice([-1, 0, 0, 0, 1], size=len(parents))
    flip = rng.random(len(parents)) < 0.1
    children[flip, 1] = 1 - np.round(parents[flip, 1])
    return np.clip(children, LOW, HIGH)


def behaviour(walker: dict[str, Any]) -> tuple[list[float], float]:
    """(width, height) of the walker's joints, and its actuation in [0, 1]."""
    xs = [joint[0] for joint in walker["joints"]]
    ys = [joint[1] for joint in walker["joints"]]
    total = active = 0.0
    for a, b, spec in walker["muscles"]:
        length = math.dist(walker["joints"][a], walker["joints"][b])
        total += length
        if spec["type"] == "muscle":
            active += length * min(abs(spec["amplitude"]), 10.0) / 10.0
    return [max(xs) - min(xs), max(ys) - min(ys)], active / total if total else 0.0


def run(
    broker: str | None, generations: int, batch: int, workers: int, seed: int, plot: str | None
) -> dict[str, Any]:
    """The loop; prints a line per generation; returns the archive's final statistics."""
    rng = np.random.default_rng(seed)
    archive = GridArchive(solution_dim=len(LOW), dims=[12, 12], ranges=MEASURE_RANGES, seed=seed)
    failures: collections.Counter[str] = collections.Counter()
    with broker_or_embedded(broker, workers) as url, Farm(url, progress=False) as farm:
        for generation in range(generations):
            started = time.perf_counter()
            if archive.empty:
                genomes = random_genomes(rng, batch)
            else:
                genomes = mutate(archive.sample_elites(batch)["solution"], rng)
            jobs = [
                {"id": f"g{generation}-{i}", "env": "elm", "kind": "walker", "code": program(g)}
                for i, g in enumerate(genomes)
            ]
            results = farm.score(jobs)
            kept, measures, objectives = [], [], []
            for genome, result in zip(genomes, results, strict=True):
                if result.ok:
                    measured, fitness = behaviour(result["result_obj"])
                    kept.append(genome)
                    measures.append(measured)
                    objectives.append(fitness)
                else:
                    failures[result.get("check") or result.status] += 1
            if kept:
                archive.add(
                    solution=np.array(kept), objective=np.array(objectives), measures=np.array(measures)
                )
            stats = archive.stats
            spent = time.perf_counter() - started
            print(
                f"generation {generation:3d}: coverage {stats.coverage:6.1%}, best {stats.obj_max or 0:.3f}, "
                f"QD score {stats.qd_score:7.2f}, {len(kept):2d}/{len(jobs)} valid, {spent:.2f} s; "
                f"failed so far: {dict(failures)}"
            )
    if plot:
        save_heatmap(archive, plot)
    stats = archive.stats
    return {
        "coverage": float(stats.coverage),
        "best": float(stats.obj_max or 0.0),
        "qd_score": float(stats.qd_score),
        "elites": len(archive),
        "failures": dict(failures),
    }


def save_heatmap(archive: GridArchive, path: str) -> None:
    """The archive as a heatmap PNG (pyribs' own `grid_archive_heatmap`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from ribs.visualize import grid_archive_heatmap

    figure, axes = plt.subplots(figsize=(6, 5))
    grid_archive_heatmap(archive, ax=axes)
    axes.set_xlabel("width")
    axes.set_ylabel("height")
    axes.set_title("walker actuation by body shape")
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", help="a running farm (default: an embedded one, started here)")
    parser.add_argument("--generations", type=int, default=10)
    parser.add_argument("--batch", type=int, default=24, help="programs per generation")
    parser.add_argument("--workers", type=int, default=2, help="pool processes of the embedded farm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", metavar="FILE", help="save the archive as a heatmap PNG")
    parser.add_argument("--json", action="store_true", help="print the final statistics as JSON")
    args = parser.parse_args()
    final = run(args.broker, args.generations, args.batch, args.workers, args.seed, args.plot)
    if args.json:
        print(json.dumps(final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
