"""The compiled games step by step against MinAtar 1.0.15 itself, over every line of its rules.

Each test plays MinAtar's `Environment` (sticky actions 0.1, ramping off, as the reference grader
builds it) and the compiled game on the same seed in lockstep: the same action into both, the
sticky-action draw and the game's own draws made from the compiled MT19937 streams on our side,
and after every step the observation's active inputs, the reward and the end of the episode must
be equal. Plain random play dies early, so some episodes are played by scripted players that read
MinAtar's state (and look ahead on a copy of it) to live long enough to reach the deep rules:
breakout's refilled wall, space_invaders' new waves and landed aliens, seaquest's six divers and
empty oxygen. Each test traces the lines MinAtar's game module runs and requires every line of its
rules to have run, but those only reachable with difficulty ramping (which the reference turns off)
and those named in UNREACHABLE with the reason.
"""

from __future__ import annotations

import ast
import copy
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import numpy as np
import pytest

from evalfarm.envs.weight_edits import (
    asterix,
    breakout,
    freeway,
    games,
    mt19937,
    runner,
    seaquest,
    space_invaders,
)

pytestmark = pytest.mark.minatar

COMPILED: dict[str, ModuleType] = dict(
    zip(games.GAMES, (asterix, breakout, freeway, seaquest, space_invaders), strict=True)
)
NOOP, LEFT, UP, RIGHT, DOWN, FIRE = range(6)
MOVES = (NOOP, LEFT, RIGHT, UP, DOWN)
# Rules that cannot run in the reference's configuration: the test of an `if` (its body is left
# out) or a statement's source, and why.
UNREACHABLE = {
    "asterix": {
        "not slot_options": "all eight lanes taken at a spawn: without ramping an entity spawns every"
        " 10 steps and leaves within 10 moves of 5 steps, so at most 5 lanes are ever taken",
    },
    "space_invaders": {
        "return None": "`_nearest_alien` finding no alien: it runs before the step's kills, and a"
        " wave killed to the last is refilled at the end of that step",
    },
}

Player = Callable[[Any], int]  # MinAtar's Environment -> the action to take


class Lines:
    """The lines of a MinAtar game module that ran while tracing was on."""

    def __init__(self, module: ModuleType) -> None:
        self.path = module.__file__
        self.ran: set[int] = set()

    def _trace(self, frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code.co_filename != self.path:
            return None

        def line(frame: FrameType, event: str, arg: object) -> Any:
            if event == "line":
                self.ran.add(frame.f_lineno)
            return line

        return line

    def run(self, call: Callable[[], Any]) -> Any:
        sys.settrace(self._trace)
        try:
            return call()
        finally:
            sys.settrace(None)


def _if_tests(tree: ast.AST) -> Iterator[ast.If]:
    yield from (node for node in ast.walk(tree) if isinstance(node, ast.If))


def rule_lines(module: ModuleType, game: str) -> dict[int, str]:
    """Line -> source of every statement of the game's rules (`act`, `reset`, the private helpers),
    less the bodies of the `if`s that only run with ramping, of the guard `act` passes after the end
    of an episode (the grader never acts then), and what UNREACHABLE names."""
    source = Path(str(module.__file__)).read_text()
    text = source.splitlines()
    left_out = {"self.terminal", *UNREACHABLE.get(game, {})}
    wanted: dict[int, str] = {}
    skipped: set[int] = set()
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef) or function.name == "__init__":
            continue
        if function.name not in ("act", "reset") and not function.name.startswith("_"):
            continue
        for node in _if_tests(function):
            test = ast.unparse(node.test)
            if "ramping" in test or test in left_out:
                for statement in node.body:
                    skipped.update(range(statement.lineno, (statement.end_lineno or 0) + 1))
        for node in ast.walk(function):
            if isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef):
                code = text[node.lineno - 1].strip()
                if code not in left_out:
                    wanted[node.lineno] = code
    return {line: code for line, code in wanted.items() if line not in skipped}


def lockstep(game: str, seed: int, player: Player, lines: Lines, max_steps: int) -> int:
    """Play one episode in both engines, comparing every step; returns its length."""
    from minatar import Environment

    reference = Environment(game, sticky_action_prob=games.STICKY_ACTION_PROB, difficulty_ramping=False)
    reference.seed(seed)
    lines.run(reference.reset)
    compiled = COMPILED[game]
    state = np.zeros(runner.STATE_SIZE, dtype=np.int64)
    stream = mt19937.new_state()
    mt19937.seed(stream, seed)
    compiled.reset(state, stream)
    active = np.zeros(runner.MAX_ACTIVE, dtype=np.int64)
    last = 0
    for step in range(max_steps):
        expected = np.flatnonzero(games.observation(game, reference.state())).tolist()
        count = compiled.features(state, active)
        assert sorted(set(active[:count].tolist())) == expected, (
            f"{game} seed {seed} step {step}: observation"
        )
        action = player(reference)
        reward, terminal = lines.run(lambda action=action: reference.act(action))
        if mt19937.next_double(stream) < games.STICKY_ACTION_PROB:
            action = last
        last = action
        ours = compiled.act(state, stream, action)
        assert not state[runner._ESCAPE], f"{game} seed {seed} step {step}: a state the rules do not model"
        assert (ours, bool(state[runner._TERMINAL])) == (reward, terminal), f"{game} seed {seed} step {step}"
        if terminal:
            return step + 1
    return max_steps


# Players. They read MinAtar's state and may look ahead on a deep copy of the game (its own random
# stream copied with it, so the real game's draws are untouched).


def _survives(game: Any, action: int) -> bool:
    trial = copy.deepcopy(game)
    return not trial.act(action)[1]


def _room(game: Any, action: int) -> int:
    """How many actions survive the step after `action`; -1 when `action` itself does not."""
    trial = copy.deepcopy(game)
    if trial.act(action)[1]:
        return -1
    return sum(_survives(trial, then) for then in (*MOVES, FIRE))


def random_player(rng: np.random.RandomState) -> Player:
    return lambda environment: int(rng.randint(6))


def careful(preferred: Callable[[Any, np.random.RandomState], list[int]], *, roomy: bool = False) -> Any:
    """A player taking the first of its preferred actions that survives the step (or, `roomy`, that
    leaves the most ways out: a sticky repeat of the last action must not kill it)."""

    def make(rng: np.random.RandomState) -> Player:
        def player(environment: Any) -> int:
            game = environment.env
            if rng.rand() < 0.05:
                return int(rng.randint(6))
            order = preferred(game, rng)
            if roomy:
                rooms = {action: _room(game, action) for action in dict.fromkeys([*order, *MOVES, FIRE])}
                enough = min(max(rooms.values()), 4)
                return next((a for a in order if rooms[a] >= enough), max(rooms, key=rooms.__getitem__))
            return next((action for action in order if _survives(game, action)), order[0])

        return player

    return make


def _toward(at: int, target: int, *, stay: int = NOOP) -> int:
    return RIGHT if target > at else LEFT if target < at else stay


def _paddle(game: Any, rng: np.random.RandomState) -> list[int]:
    """Breakout: under the column where the ball will next fall through row 8 (played out on a copy:
    until it reaches the paddle's row the paddle changes nothing)."""
    trial = copy.deepcopy(game)
    for _ in range(40):
        if (trial.ball_y == 8 and trial.ball_dir >= 2) or trial.act(NOOP)[1]:
            break
    return [_toward(game.pos, trial.ball_x), NOOP, LEFT, RIGHT]


def _shot_kills(game: Any, first: int) -> bool:
    """Whether `first`, then a shot as soon as one is ready, kills an alien (played on a copy)."""
    trial = copy.deepcopy(game)
    for action in [first] + [FIRE] * 12:
        reward, terminal = trial.act(action)
        if reward or terminal:
            return reward > 0
        if action == FIRE and trial.shot_timer:  # fired: wait for the bullet
            for _ in range(10):
                reward, terminal = trial.act(NOOP)
                if reward or terminal:
                    return reward > 0
            return False
    return False


def gunner(spare: int) -> Callable[[Any, np.random.RandomState], list[int]]:
    """Space invaders: shoots the aliens down to `spare` of them (aimed on a copy when few are left,
    as they then move every step), then only dodges."""

    def preferred(game: Any, rng: np.random.RandomState) -> list[int]:
        left = np.count_nonzero(game.alien_map)
        if left <= spare:
            return _dodger(game, rng)
        if left < 6:
            aimed = [a for a in (FIRE, NOOP, LEFT, RIGHT) if _shot_kills(game, a)]
            if aimed:
                return [*aimed, NOOP, LEFT, RIGHT]
        columns = np.flatnonzero(game.alien_map.any(axis=0))
        target = int(columns[np.argmin(abs(columns - game.pos))])
        return [_toward(game.pos, target, stay=FIRE), NOOP, LEFT, RIGHT]

    return preferred


def _dodger(game: Any, rng: np.random.RandomState) -> list[int]:
    """Space invaders: never fires, so the aliens come down to its row."""
    return [NOOP, LEFT, RIGHT] if rng.rand() < 0.8 else [LEFT, RIGHT, NOOP]


def _diver(game: Any, rng: np.random.RandomState) -> list[int]:
    """Seaquest: picks up divers, shoots what is ahead in its row, surfaces with six or low on air."""
    if game.diver_count == 6 or (game.oxygen < 30 and game.diver_count > 0):
        return [UP, LEFT, RIGHT, NOOP, DOWN]
    if game.sub_y == 0:
        return [DOWN, LEFT, RIGHT, NOOP]
    order = [
        FIRE
        for enemy in game.e_subs + game.e_fish
        if enemy[1] == game.sub_y and (enemy[0] > game.sub_x) == game.sub_or and game.shot_timer == 0
    ]
    if game.divers:
        diver = min(game.divers, key=lambda d: abs(d[1] - game.sub_y) + abs(d[0] - game.sub_x))
        if diver[1] != game.sub_y:
            order.append(DOWN if diver[1] > game.sub_y else UP)
        else:
            order.append(_toward(game.sub_x, diver[0], stay=FIRE))
    return order + ([FIRE, LEFT, RIGHT, DOWN, NOOP] if rng.rand() < 0.5 else [RIGHT, LEFT, DOWN, FIRE, NOOP])


def lander(*, walks: bool) -> Callable[[np.random.RandomState], Player]:
    """Space invaders: dodges until the aliens land in its row, then walks into the nearest one
    (`walks`) or waits where they are going."""

    def make(rng: np.random.RandomState) -> Player:
        dodge = careful(_dodger, roomy=True)(rng)

        def player(environment: Any) -> int:
            game = environment.env
            landed = np.flatnonzero(game.alien_map[9])
            if not landed.size:
                return dodge(environment)
            if walks:
                return _toward(game.pos, int(landed[np.argmin(abs(landed - game.pos))]))
            ahead = landed.max() + 1 if game.alien_dir > 0 else landed.min() - 1
            return _toward(game.pos, int(np.clip(ahead, 0, 9)))

        return player

    return make


def _hunter(game: Any, rng: np.random.RandomState) -> list[int]:
    """Seaquest: goes to the row of the nearest enemy sub, faces it and fires."""
    if not game.e_subs or game.sub_y == 0:
        return [DOWN, LEFT, RIGHT, NOOP]
    sub = min(game.e_subs, key=lambda s: abs(s[1] - game.sub_y) + abs(s[0] - game.sub_x))
    if sub[1] != game.sub_y:
        return [DOWN if sub[1] > game.sub_y else UP, NOOP, LEFT, RIGHT]
    if (sub[0] > game.sub_x) != game.sub_or:
        return [RIGHT if sub[0] > game.sub_x else LEFT, NOOP, UP, DOWN]
    return [FIRE, NOOP, UP, DOWN]


def climber(rng: np.random.RandomState) -> Player:
    """Freeway: up, mostly."""
    return lambda environment: UP if rng.rand() < 0.9 else int(rng.randint(6))


def wanderer(rng: np.random.RandomState) -> Player:
    """Seaquest: random, firing often, but never surfacing without a diver (which ends the game)."""

    def player(environment: Any) -> int:
        game = environment.env
        action = int(rng.choice(6, p=[0.1, 0.15, 0.15, 0.15, 0.15, 0.3]))
        return DOWN if action == UP and game.sub_y <= 1 and game.diver_count == 0 else action

    return player


# game -> (player, episodes, most steps an episode)
PLAYS: dict[str, list[tuple[Callable[[np.random.RandomState], Player], int, int]]] = {
    "asterix": [(random_player, 40, 2000)],
    "breakout": [(random_player, 20, 2000), (careful(_paddle), 8, 3000)],
    "freeway": [(random_player, 3, 3000), (climber, 3, 3000)],
    "seaquest": [
        (random_player, 20, 2000),
        (wanderer, 30, 2000),
        (careful(_hunter), 20, 1000),
        (careful(_diver), 8, 1500),
    ],
    "space_invaders": [
        (random_player, 20, 2000),
        (careful(gunner(spare=0), roomy=True), 3, 1500),
        (careful(gunner(spare=4), roomy=True), 3, 1000),
        (lander(walks=True), 1, 500),
        (lander(walks=False), 2, 500),
    ],
}


def episodes(game: str) -> Iterator[tuple[int, Player, int]]:
    rng = np.random.RandomState(7)
    seed = 1
    for make, count, max_steps in PLAYS[game]:
        for _ in range(count):
            yield seed, make(rng), max_steps
            seed += 1


@pytest.mark.slow
@pytest.mark.parametrize("game", games.GAMES)
def test_every_step_equals_minatar_over_every_rule(game: str) -> None:
    module = importlib.import_module(f"minatar.environments.{game}")
    lines = Lines(module)
    lengths = [lockstep(game, seed, player, lines, max_steps) for seed, player, max_steps in episodes(game)]
    rules = rule_lines(module, game)
    missed = {line: code for line, code in rules.items() if line not in lines.ran}
    assert not missed, (
        f"{game}: rules never run over {len(lengths)} episodes (longest {max(lengths)}): {missed}"
    )


@pytest.mark.parametrize("game", sorted(UNREACHABLE))
def test_what_is_left_out_is_in_minatars_rules(game: str) -> None:
    module = importlib.import_module(f"minatar.environments.{game}")
    source = Path(str(module.__file__)).read_text()
    tests = {ast.unparse(node.test) for node in _if_tests(ast.parse(source))}
    statements = {line.strip() for line in source.splitlines()}
    assert all(code in tests or code in statements for code in UNREACHABLE[game])


@pytest.mark.parametrize("seed", [0, 1, 1729, 7919, 2**31 - 1, 2**32 - 1])
def test_streams_are_numpys_draw_for_draw(seed: int) -> None:
    expected = np.random.RandomState(seed)
    stream = mt19937.new_state()
    mt19937.seed(stream, seed)
    choices = np.random.RandomState((seed + 1) % 2**32)
    for _ in range(3000):  # several twists of the 624-word state
        if choices.rand() < 0.5:
            assert mt19937.next_double(stream) == expected.random_sample()
        else:
            low = int(choices.randint(0, 5))
            high = low + int(choices.choice([1, 2, 3, 7, 8, 9, 10, 100, 2**31]))
            assert mt19937.randint(stream, low, high) == expected.randint(low, high)
