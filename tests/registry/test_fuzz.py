"""Fuzzed registry files (issue #9): no crash, no hang, no NaN in JSON, the others still load.

A fixed budget keeps the suite fast: hypothesis runs derandomized (the same examples each
run, so the suite never flakes) with a bounded number of examples. Files found nasty are
kept in tests/corpus/, which test_corpus.py checks on every run.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.conftest import Toolctl, examples, write_files
from toolctl.registry.loader import parse_file

NAMES = st.sampled_from(
    [
        "read-file",
        "Read_File",
        "read.file",
        "READ-FILE",
        "r\u0435ad-file",  # Cyrillic e: invalid, never confusable
        "\ufb01le",
        "ok",
        "",
        "-x",
        "a" * 200,
        "tool",
    ]
) | st.text(max_size=12)
NUMBERS = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70)
SCALARS = NUMBERS | st.text(max_size=12) | st.booleans()
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
SCHEMA_KEYS = st.sampled_from(
    [
        "type",
        "properties",
        "required",
        "pattern",
        "dependencies",
        "$ref",
        "items",
        "enum",
        "minimum",
        "multipleOf",
        "format",
        "additionalProperties",
        "patternProperties",
        "anyOf",
        "definitions",
    ]
)
ODD = st.sampled_from(
    ["(", "[", "#/definitions/x", "http://127.0.0.1:9/s.json", "file:///etc/passwd", "object"]
)
SCHEMAS = st.recursive(
    st.dictionaries(SCHEMA_KEYS, SCALARS | ODD, max_size=3),
    lambda inner: st.dictionaries(
        SCHEMA_KEYS,
        inner
        | st.lists(inner, max_size=2)
        | st.dictionaries(st.text(max_size=4), inner, max_size=2)
        | ODD,
        max_size=3,
    ),
    max_leaves=8,
)
TOOLS = st.fixed_dictionaries(
    {"name": NAMES, "local": st.just({"command": ["true"]})},
    optional={
        "description": st.text(max_size=20),
        "timeout": NUMBERS,
        "parameters": SCHEMAS,
        "config": st.dictionaries(st.text(max_size=6), VALUES, max_size=3),
        "tags": st.lists(st.text(max_size=5), max_size=3),
    },
)
DOCUMENTS = st.fixed_dictionaries(
    {"tool": st.lists(TOOLS, min_size=1, max_size=3)}
) | st.dictionaries(
    st.sampled_from(["tool", "service", "action", "group", "x"]), VALUES, max_size=2
)


def nest(depth: int) -> str:
    return "[" * depth + "]" * depth


@st.composite
def registry_files(draw: st.DrawFn) -> str:
    """TOML text: a generated document, sometimes with a deep array or raw noise appended."""
    try:
        text = tomli_w.dumps(draw(DOCUMENTS))
    except (TypeError, ValueError, RecursionError):
        text = ""
    extra = draw(st.sampled_from(["", "deep", "noise", "nan"]))
    if extra == "deep":
        depth = draw(st.sampled_from([70, 255, 400, 1200]))
        text += f'[[tool]]\nname = "deep"\nconfig = {{ v = {nest(depth)} }}\n[tool.local]\ncommand = ["true"]\n'

    elif extra == "noise":
        text += draw(st.text(max_size=40))
    elif extra == "nan":
        text = text.replace("= 1\n", "= nan\n")
    return text


def finite(data: Any) -> bool:
    return json.dumps(data, allow_nan=False) is not None


KNOWN = [  # one of each class issue #9 found, so the budget never misses them
    '[[tool]]\nname = "d"\nconfig = { v = ' + nest(1200) + ' }\n[tool.local]\ncommand = ["true"]\n',
    '[[tool]]\nname = "d"\ndefault = ' + nest(255) + '\n[tool.local]\ncommand = ["true"]\n',
    '[[tool]]\nname = "n"\ntimeout = nan\n[tool.local]\ncommand = ["true"]\n',
    '[[tool]]\nname = "s"\nparameters = { dependencies = { a = 5 } }\n[tool.local]\ncommand = ["true"]\n',
    "x = " + "9" * 5000 + "\n",
]


@settings(max_examples=examples(60), deadline=None, derandomize=True, database=None)
@given(registry_files())
@example(KNOWN[0])
@example(KNOWN[1])
@example(KNOWN[2])
@example(KNOWN[3])
@example(KNOWN[4])
def test_parsing_any_file_gives_definitions_or_problems(text: str) -> None:
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "fuzz.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        parsed = parse_file(str(path))
        for definition in parsed.definitions:
            assert finite(definition.data)
            assert not any(
                isinstance(v, float) and not math.isfinite(v) for v in definition.data.values()
            )
        for problem in parsed.problems:
            assert "\n" not in problem.message.strip() or "TOML" in problem.message


OK = '[[tool]]\nname = "zz-ok"\n[tool.local]\ncommand = ["true"]\n'


@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=registry_files(), second=registry_files())
@example(first=KNOWN[0], second=KNOWN[3])
def test_commands_survive_fuzzed_registries(
    first: str, second: str, tmp_path: Path, toolctl: Toolctl
) -> None:
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    write_files(work, {"r/a.toml": first, "r/b.toml": second, "r/zz-ok.toml": OK})
    for args in (["check", "--json"], ["list", "--json"], ["export", "--format", "openai"]):
        result = toolctl(*args, "-r", "r", cwd=work)
        assert result.returncode != 70, result.stderr
        assert "Traceback" not in result.stdout + result.stderr
        assert result.returncode in (0, 3), result.stderr
        data = json.loads(
            result.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))
        )
        if args[0] == "list":
            assert "zz-ok" in [item["name"] for item in data]
    run = toolctl("run", "zz-ok", "-r", "r", cwd=work)
    assert run.returncode == 0, run.stderr
