"""The edits grammar: the last ```edits block of an answer, applied to zero-initialised tensors.

Statements are `T[index] = literal` or `T[index] op= literal` (op one of `*`, `+`, `-`); indices are
ints and slices (tuples of them). Everything is parsed with `ast` and `ast.literal_eval`: an answer is
data and is never executed. The reference grader's checks run in the same order and raise the same
exceptions with the same messages, so a bad answer gets the reference's `error` text.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

import numpy as np

TENSOR_SHAPES: dict[str, tuple[int, ...]] = {
    "W1": (600, 32),
    "b1": (32,),
    "W2": (32, 32),
    "b2": (32,),
    "W3": (32, 6),
    "b3": (6,),
}
EDITS_BLOCK = re.compile(r"```edits\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)
MAX_ABS_WEIGHT = 1e6

# What the reference grader turns into a graded 0 (parse_success 0) rather than a crash.
PARSE_ERRORS: tuple[type[BaseException], ...] = (
    ImportError,
    IndexError,
    KeyError,
    SyntaxError,
    TypeError,
    ValueError,
)

Tensors = dict[str, np.ndarray]


def _index_item(node: ast.expr) -> slice | int:
    """One index component: a slice of literals, or a literal converted with `int`."""
    if isinstance(node, ast.Slice):
        return slice(
            ast.literal_eval(node.lower) if node.lower is not None else None,
            ast.literal_eval(node.upper) if node.upper is not None else None,
            ast.literal_eval(node.step) if node.step is not None else None,
        )
    return int(ast.literal_eval(node))


def _target(node: ast.expr, tensors: Tensors) -> tuple[np.ndarray, Any]:
    """The tensor and numpy key an edit writes to."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.value, ast.Name):
        raise ValueError("edit target must index a named tensor")
    if node.value.id not in tensors:
        raise ValueError(f"unknown tensor {node.value.id!r}")
    index = node.slice
    if isinstance(index, ast.Tuple):
        return tensors[node.value.id], tuple(_index_item(item) for item in index.elts)
    return tensors[node.value.id], _index_item(index)


def _apply(statement: ast.stmt, tensors: Tensors) -> None:
    """Apply one statement; the target is resolved before the value, the operator checked last."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        tensor, key = _target(statement.targets[0], tensors)
        tensor[key] = ast.literal_eval(statement.value)
    elif isinstance(statement, ast.AugAssign):
        tensor, key = _target(statement.target, tensors)
        value = ast.literal_eval(statement.value)
        if isinstance(statement.op, ast.Mult):
            tensor[key] *= value
        elif isinstance(statement.op, ast.Add):
            tensor[key] += value
        elif isinstance(statement.op, ast.Sub):
            tensor[key] -= value
        else:
            raise ValueError("only *=, +=, and -= augmented edits are allowed")
    else:
        raise ValueError("edits may contain only assignments")


def _check_bounds(tensors: Tensors) -> None:
    values = np.concatenate([tensor.ravel() for tensor in tensors.values()])
    if not np.all(np.isfinite(values)) or np.max(np.abs(values), initial=0.0) > MAX_ABS_WEIGHT:
        raise ValueError("weights must be finite and have absolute value at most 1e6")


def apply_edits(answer: str) -> tuple[Tensors, int]:
    """The float32 tensors an answer's last edits block produces, and how many edits it applied.

    Raises one of PARSE_ERRORS with the reference grader's message when the answer is not valid.
    """
    matches = EDITS_BLOCK.findall(answer)
    if not matches:
        raise ValueError("answer has no edits block")
    tree = ast.parse(matches[-1], mode="exec")
    tensors = {name: np.zeros(shape, dtype=np.float32) for name, shape in TENSOR_SHAPES.items()}
    # Overflowing casts (1e300 into float32) warn; the bounds check below reports them, as the
    # reference does, and a warning must not turn into an error under strict warning filters.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for statement in tree.body:
            _apply(statement, tensors)
        _check_bounds(tensors)
    return tensors, len(tree.body)


def nonzero_weights(tensors: Tensors) -> int:
    """How many weights are non-zero, over all tensors."""
    return sum(int(np.count_nonzero(value)) for value in tensors.values())
