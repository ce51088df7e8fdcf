"""`list` and `export` stream from the index: the same bytes as the whole-list output."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Toolctl
from toolctl.cli import jsonstream
from toolctl.interchange.functions import OPENAI_NAME, input_schema
from toolctl.registry.index import Registry
from toolctl.settings import Settings

TOOLS = 3000


def _registry(root: Path) -> Path:
    """3,000 tools of varied shapes, ten to a file, written in no particular name order."""
    root.mkdir()
    shapes = [
        '[tool.local]\ncommand = ["true", "{x}"]\n[[tool.arguments]]\nname = "x"\n',
        '[tool.http]\nurl = "http://127.0.0.1:9/é"\n[tool.http.headers]\na = "b"\n',
        '[tool.local]\ncommand = ["cat"]\n[tool.parameters]\ntype = "object"\n'
        'properties = { n = { type = "integer", default = 3 } }\n',
    ]
    for start in range(0, TOOLS, 10):
        text = "".join(
            f'[[tool]]\nname = "t{(n * 7919) % TOOLS:05d}{".x" * (n % 7 == 0)}"\ndescription = "tool \\"{n}\\" ☃"\n'
            f'tags = ["a", "b{n % 3}"]\ntimeout = {n % 5 + 0.5}\n' + shapes[n % 3]
            for n in range(start, start + 10)
        )
        (root / f"f{start:05d}.toml").write_text(text)
    return root


def _open(root: Path) -> Registry:
    return Registry.open(Settings.load([root]), full=True)


def test_list_json_and_export_at_thousands_match_a_plain_dump(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    root = _registry(tmp_path / "reg")
    rows = [
        {"kind": "tool", **d.data, "file": str(Path(d.file).relative_to(tmp_path)), "line": d.line}
        for d in _open(root).winners("tool")
    ]
    assert len(rows) == TOOLS  # every shape valid: nothing skipped

    listed = toolctl("list", "--json", "-r", "reg")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == json.dumps(rows, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    tools = [{k: v for k, v in r.items() if k not in ("kind", "file", "line")} for r in rows]
    openai = [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t["description"],
                "parameters": input_schema(t),
            },
        }
        for t in tools
        if OPENAI_NAME.match(t["name"])
    ]
    assert 0 < len(openai) < TOOLS
    exported = toolctl("export", "--format", "openai", "-r", "reg")
    assert exported.returncode == 0, exported.stderr
    assert (
        exported.stdout == json.dumps(openai, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )
    assert exported.stderr.count("OpenAI function names allow") == TOOLS - len(openai)
    mcp = {
        "tools": [
            {"name": t["name"], "description": t["description"], "inputSchema": input_schema(t)}
            for t in tools
        ]
    }
    exported = toolctl("export", "--format", "mcp", "-r", "reg")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == json.dumps(mcp, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_an_empty_listing_is_the_same_json(tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "reg").mkdir()
    assert toolctl("list", "--json", "-r", "reg").stdout == "[]\n"
    assert toolctl("export", "-f", "openai", "-r", "reg").stdout == "[]\n"
    assert toolctl("export", "-f", "mcp", "-r", "reg").stdout == '{\n  "tools": []\n}\n'


def _old_table(columns: list[str], rows: list[list[str]]) -> str:
    """The table as `list` wrote it before it streamed (every row held, then aligned)."""
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    out = ""
    for line in [columns, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=False)]
        out += "  ".join([*cells, line[-1]]).rstrip() + "\n"
    return out


def test_the_streamed_table_equals_the_old_one(tmp_path: Path, toolctl: Toolctl) -> None:
    root = tmp_path / "reg"
    root.mkdir()
    (root / "a.toml").write_text(
        '[[tool]]\nname = "zeta"\ndescription = "last"\ncategory = "text"\n'
        '[tool.local]\ncommand = ["true"]\n\n'
        '[[tool]]\nname = "a-very-long-tool-name"\nstate = "staging"\n'
        '[tool.http]\nurl = "http://127.0.0.1:9/"\n\n'
        '[[tool]]\nname = "mid"\ndescription = "ünïcode ☃"\n[tool.local]\ncommand = ["true"]\n'
    )
    listed = toolctl("list", "-r", "reg")
    assert listed.returncode == 0, listed.stderr
    expected = _old_table(
        ["NAME", "RUNTIME", "CATEGORY", "DESCRIPTION"],
        [
            ["a-very-long-tool-name", "http (staging)", "", ""],
            ["mid", "local", "", "ünïcode ☃"],
            ["zeta", "local", "text", "last"],
        ],
    )
    assert listed.stdout == expected


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON, st.sampled_from(["", "  ", "    "]))
def test_pretty_is_json_dumps_at_any_nesting(value: object, indent: str) -> None:
    """Any JSON value (markers, control characters and lone surrogates in strings too)."""
    expected = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    assert jsonstream.pretty(value, indent) == expected.replace("\n", "\n" + indent)


@settings(max_examples=100, deadline=None)
@given(st.lists(JSON, max_size=12), st.integers(1, 5))
def test_write_list_is_json_dumps_in_any_batch(values: list[object], batch: int) -> None:
    import io

    out = io.StringIO()
    jsonstream.write_list(out, iter(values), batch=batch)
    assert out.getvalue() == json.dumps(values, indent=2, sort_keys=True, ensure_ascii=False)
