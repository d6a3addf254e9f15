"""The gateway's JSON responses, written as the farm writes results everywhere else.

Starlette's own JSONResponse refuses NaN and writes raw UTF-8: a program's value holding NaN, or a
message with a lone surrogate a program raised, turned a whole batch's answer into a 500. Here the
text is Python's `json.dumps` with ASCII escapes (valid UTF-8 whatever a program wrote) and NaN and
Infinity as Python writes them, as in the results of `evalfarm score`.
"""

from __future__ import annotations

import json
from typing import Any

from starlette import responses


class JSONResponse(responses.JSONResponse):
    """A JSON response that any result, whatever its program returned, can be written as."""

    def render(self, content: Any) -> bytes:
        """The body: compact, ASCII, NaN and Infinity kept."""
        return json.dumps(content, ensure_ascii=True, allow_nan=True, separators=(",", ":")).encode()
