"""Fuzzing `run`'s argument surfaces (issue 9): --arg pairs, --args JSON, --batch lines.

Whatever comes in, `run` ends with a documented exit code and a one-line error: never 70,
never a traceback. A fixed, derandomized budget keeps the suite fast and repeatable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples, run_in_process, write_files

PY = sys.executable
ALLOWED = {0, 1, 2}
FUZZ = settings(
    max_examples=examples(40),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

REGISTRY = f"""
[[tool]]
name = "fz-argv"
[tool.local]
command = ["{PY}", "-c", "import sys; print(len(sys.argv))", "{{text}}", "n={{n}}", "{{o}}"]
input = "none"
[[tool.arguments]]
name = "text"
required = false
[[tool.arguments]]
name = "n"
type = "integer"
required = false
[[tool.arguments]]
name = "o"
type = "array"
required = false

[[tool]]
name = "fz-json"
parameters = {{ type = "object", properties = {{ x = {{ type = "object" }} }} }}
[tool.local]
command = ["{PY}", "-c", "import sys; sys.stdin.read(); print('ok')"]
"""

# Any code point, lone surrogates and NUL included.
anything = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
keys = st.one_of(st.sampled_from(["text", "n", "o", "x", "", "=", "-"]), anything)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | anything,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
deep = st.sampled_from([1, 63, 64, 65, 300, 999, 5000]).map(lambda d: "[" * d + "]" * d)
raw_values = st.one_of(anything, deep, json_values.map(lambda v: json.dumps(v)))


def _check(args: list[str], cwd: Path, stdin: str | None = None) -> Any:
    done = run_in_process(args, cwd, stdin, None)
    assert done.returncode in ALLOWED, (args[:4], done.returncode, done.stderr[-500:])
    assert "Traceback" not in done.stderr
    return done


@pytest.fixture
def reg(tmp_path: Path) -> Path:
    write_files(tmp_path, {"reg/tools.toml": REGISTRY})
    return tmp_path / "reg"


@FUZZ
@given(
    pairs=st.lists(
        st.one_of(st.tuples(keys, raw_values), st.tuples(st.sampled_from(["o", "text"]), deep)),
        max_size=3,
    )
)
def test_fuzzed_arg_pairs(reg: Path, pairs: list[tuple[str, str]]) -> None:
    args = ["run", "fz-argv", "-r", str(reg)]
    for key, value in pairs:
        args += ["--arg", f"{key}={value}"]
    _check(args, reg)


@FUZZ
@given(
    document=st.one_of(
        json_values.map(lambda v: json.dumps(v)),
        deep,
        anything,
        st.tuples(keys, deep).map(lambda kv: json.dumps({kv[0]: None})[:-5] + kv[1] + "}"),
    )
)
def test_fuzzed_args_json(reg: Path, document: str) -> None:
    for tool in ("fz-argv", "fz-json"):
        _check(["run", tool, "--args", document, "-r", str(reg)], reg)


@FUZZ
@given(lines=st.lists(st.one_of(json_values.map(json.dumps), deep, anything), max_size=4))
def test_fuzzed_batch_lines(reg: Path, lines: list[str]) -> None:
    text = "".join(line.replace("\n", " ") + "\n" for line in lines)
    batch = reg.parent / "batch.jsonl"
    batch.write_bytes(text.encode("utf-8", "surrogatepass"))
    done = _check(["run", "fz-argv", "--batch", str(batch), "-r", str(reg)], reg)
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == sum(1 for line in lines if line.replace("\n", " ").strip())
