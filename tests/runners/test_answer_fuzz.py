"""Any answer a tool or a gateway (tool_agent's router) sends is read into a ToolResult
whose fields have their types: never an exception, never an exit code out of 0-255, never
an error that is not text."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from toolctl.runners.base import ToolResult

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20))
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(["success", "output", "data", "error", "exit_code", "error_code", "x"])
ANSWERS = st.dictionaries(KEYS, VALUES, max_size=6)


@settings(max_examples=examples(300), deadline=None)
@given(answer=st.one_of(ANSWERS, VALUES), gateway=st.booleans())
def test_any_answer_is_a_result_of_the_right_types(answer: Any, gateway: bool) -> None:
    text = json.dumps(answer)
    result = ToolResult.from_answer(text, runtime="tool-agent", gateway=gateway, duration_ms=1.0)
    assert isinstance(result.success, bool)
    assert result.error is None or isinstance(result.error, str)
    assert isinstance(result.output, str)
    assert result.exit_code is None or (
        type(result.exit_code) is int and 0 <= result.exit_code <= 255
    )
    assert result.error_code is None or isinstance(result.error_code, str)
    json.dumps(result.finite().to_json(), allow_nan=False)
    if gateway and isinstance(answer, dict) and isinstance(answer.get("success"), bool):
        assert result.success is answer["success"]  # a gateway's verdict decides
