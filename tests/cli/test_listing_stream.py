"""`list` and `export` stream from the index: the same bytes as the whole-list output."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Toolctl, examples
from toolctl.interchange.functions import input_schema
from toolctl.names import function_name
from toolctl.registry.index import Registry
from toolctl.settings import Settings
from toolctl.terminal import jsonstream
from toolctl.terminal.render import shown

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
                "name": function_name(t["name"]),
                "description": t["description"],
                "parameters": input_schema(t),
            },
        }
        for t in tools
        if function_name(t["name"])
    ]
    assert len(openai) == TOOLS  # 't00007.x' goes by 't00007_x'
    exported = toolctl("export", "--format", "openai", "-r", "reg")
    assert exported.returncode == 0, exported.stderr
    assert (
        exported.stdout == json.dumps(openai, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )
    assert "left out" not in exported.stderr
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


TEXT = st.text(st.characters(exclude_categories=()), max_size=8)  # controls, surrogates too
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats()
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=examples(500), deadline=None)
@given(JSON, st.sampled_from(["", "  ", "    "]))
def test_pretty_is_json_dumps_at_any_nesting(value: object, indent: str) -> None:
    """Any JSON value: unicode, control characters and lone surrogates, NaN and infinities,
    big integers, empty and nested containers."""
    expected = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    assert jsonstream.pretty(value, indent) == expected.replace("\n", "\n" + indent)


def test_pretty_leaves_what_json_never_makes_to_json_dumps() -> None:
    """Tuples, subclasses of int and dict, and keys that are not strings: dumps' own rules."""
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    for value in [
        {"a": (1, [2]), "b": Level.HIGH},
        {1: "x", 3: [], 2: {"k": True}},
        {"o": {2.5: 1, 1.5: None}},
        [{"z": 1, "a": {3: 4}}],
        type("Sub", (dict,), {})(b=1, a=[1]),
    ]:
        expected = shown(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))
        assert jsonstream.pretty(value, "  ") == expected.replace("\n", "\n  ")
    try:
        jsonstream.pretty({"a": object()})
    except TypeError as exc:
        assert "is not JSON serializable" in str(exc)
    else:
        raise AssertionError("an object JSON cannot hold was written")


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(JSON, max_size=12), st.integers(1, 5))
def test_write_list_is_json_dumps_in_any_batch(values: list[object], batch: int) -> None:
    import io

    out = io.StringIO()
    jsonstream.write_list(out, iter(values), batch=batch, shown=shown)
    assert out.getvalue() == shown(json.dumps(values, indent=2, sort_keys=True, ensure_ascii=False))


def _varied(root: Path) -> Path:
    """Tools with a category, a state, MCP annotations, an odd name; a group of all of them."""
    root.mkdir()
    (root / "a.toml").write_text(
        '[[tool]]\nname = "zeta"\ndescription = "last"\ncategory = "Text"\nstate = "staging"\n'
        '[tool.annotations]\nreadOnlyHint = true\ntitle = "Zeta ☃"\n'
        '[tool.local]\ncommand = ["true"]\n\n'
        '[[tool]]\nname = "odd.name"\ncategory = "text"\n'
        '[tool.http]\nurl = "http://127.0.0.1:9/"\n\n'
        '[[tool]]\nname = "mid"\ndescription = "ünïcode \\u0001 [x] {y}"\nstate = "deprecated"\n'
        '[tool.local]\ncommand = ["cat"]\n[[tool.arguments]]\nname = "n"\ntype = "integer"\n\n'
        '[[group]]\nname = "every"\ntools = ["zeta", "odd.name", "mid"]\n'
    )
    return root


def test_the_lean_table_and_export_equal_the_full_descriptor_paths(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    """`list` (no --search) and the streamed exports read a few fields through SQLite;
    `list --search ''` and `export --group` still decode whole descriptors: same bytes."""
    _varied(tmp_path / "reg")
    for filters in ([], ["--category", "TEXT"], ["--runtime", "http"], ["--runtime", "pulsar"]):
        lean = toolctl("list", *filters, "-r", "reg")
        full = toolctl("list", *filters, "--search", "", "-r", "reg")
        assert lean.returncode == full.returncode == 0, lean.stderr + full.stderr
        assert lean.stdout == full.stdout
    assert "zeta      local (staging)" in toolctl("list", "-r", "reg").stdout
    for options in (["-f", "openai"], ["-f", "mcp"], ["-f", "openai", "--strict-schemas"]):
        streamed = toolctl("export", *options, "-r", "reg")
        whole = toolctl("export", *options, "--group", "every", "-r", "reg")
        assert streamed.returncode == whole.returncode == 0, streamed.stderr + whole.stderr
        assert (streamed.stdout, streamed.stderr) == (whole.stdout, whole.stderr)
    mcp = json.loads(toolctl("export", "-f", "mcp", "-r", "reg").stdout)
    assert mcp["tools"][2]["annotations"] == {"readOnlyHint": True, "title": "Zeta ☃"}


def test_winner_fields_are_the_descriptor_values(tmp_path: Path) -> None:
    registry = _open(_varied(tmp_path / "reg"))
    fields = ("state", "category", "annotations", "arguments", "timeout", "missing")
    lean = list(registry.iter_winner_fields("tool", fields))
    full = [
        (d.name, d.data["runtime"], [d.data.get(f) for f in fields])
        for d in registry.winners("tool")
    ]
    assert lean == full
    assert [name for name, _, _ in lean] == ["mid", "odd.name", "zeta"]
    strings = ("state", "category", "description", "missing")
    as_sqlite = list(registry.iter_winner_fields("tool", strings, strings=True))
    assert as_sqlite == [
        (d.name, d.data["runtime"], [d.data.get(f) for f in strings])
        for d in registry.winners("tool")
    ]
