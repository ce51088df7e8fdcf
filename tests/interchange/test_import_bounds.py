"""Imports bounded in memory and time (issue #24 item 8): alias bombs, self-referencing
aliases, deep nesting, huge integers and lone surrogates in every import format end in one
line and exit 2, within seconds, never exit 70."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Toolctl, examples

BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{n}: &a{n} [*a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}, "
    f"*a{n - 1}, *a{n - 1}, *a{n - 1}]\n"
    for n in range(1, 10)
)
HUGE = "9" * 5000
DEEP = 100_000
FORMATS = {  # format: (suffix, how a document is wrapped so the format reads it)
    "chat2graph": ".yaml",
    "trustgraph": ".json",
    "tool-agent": ".json",
    "mcp-config": ".json",
}
CASES = {
    "alias-bomb": ("yaml", "toolkit:\n  - " + BOMB.replace("\n", "\n    ").rstrip() + "\n"),
    "bomb-in-tools": ("yaml", BOMB + "tools: *a9\nactions: *a9\n"),
    "self-alias": ("yaml", "tools: &t [*t]\n"),
    "deep-yaml": ("yaml", "tools: " + "[" * DEEP + "]" * DEEP + "\n"),
    "huge-int-yaml": ("yaml", f"tools: [{{name: a, desc: b, x: {HUGE}}}]\n"),
    "surrogate-yaml": ("yaml", 'tools: [{name: "a\\ud800", desc: b}]\n'),
    "deep-json": ("json", "[" * DEEP + "]" * DEEP),
    "huge-int-json": ("json", f'[{{"tool_id": "a", "n": {HUGE}}}]'),
    "surrogate-json": ("json", '[{"tool_id": "a\\ud800", "name": "x"}]'),
    "surrogate-key-json": ("json", '{"mcpServers": {"a": {"command": "x", "\\udc00": 1}}}'),
}


def one_line_exit_2(result: object) -> None:
    stderr = getattr(result, "stderr", "")
    assert getattr(result, "returncode", None) == 2, stderr[:500]
    assert "internal error" not in stderr and "Traceback" not in stderr
    assert stderr.count("\n") == 1 and len(stderr) < 1000, stderr[:500]


READS_YAML = {"chat2graph", "mcp-config"}
PAIRS = [
    (format, case)
    for format in FORMATS
    for case, (kind, _) in CASES.items()
    if kind == "json" or format in READS_YAML  # the JSON-only formats read no YAML
]


@pytest.mark.parametrize(("format", "case"), PAIRS)
def test_hostile_documents_are_one_line(
    tmp_path: Path, toolctl: Toolctl, format: str, case: str
) -> None:
    kind, text = CASES[case]
    suffix = ".yaml" if kind == "yaml" else FORMATS[format]
    path = tmp_path / f"input{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    (tmp_path / "reg").mkdir()
    result = toolctl("import", "-r", str(tmp_path / "reg"), format, str(path))
    one_line_exit_2(result)
    assert not list((tmp_path / "reg").rglob("*.toml"))


def test_a_trustgraph_value_string_is_bounded_too(tmp_path: Path, toolctl: Toolctl) -> None:
    path = tmp_path / "config.json"
    deep = "[" * DEEP + "]" * DEEP
    path.write_text(json.dumps([{"key": "tool/a", "value": deep}]))
    (tmp_path / "reg").mkdir()
    one_line_exit_2(toolctl("import", "-r", str(tmp_path / "reg"), "trustgraph", str(path)))


SCALARS = st.sampled_from(["x", "1" * 4400, "-.inf", ".nan", "~", "'\\ud800'", '"\\ud800"', "{}"])


@st.composite
def yaml_documents(draw: st.DrawFn) -> str:
    """YAML with anchors and aliases to earlier anchors (and now and then to itself)."""
    lines = []
    for n in range(draw(st.integers(1, 6))):
        parts = []
        for _ in range(draw(st.integers(0, 6))):
            choice = draw(st.integers(0, 2))
            if choice == 0 or n == 0:
                parts.append(draw(SCALARS))
            else:
                parts.append(f"*a{draw(st.integers(0, n))}")
        lines.append(f"a{n}: &a{n} [{', '.join(parts)}]")
    key = draw(st.sampled_from(["tools", "actions", "toolkit", "mcpServers", "servers"]))
    lines.append(f"{key}: *a{len(lines) - 1}")
    return "\n".join(lines) + "\n"


@settings(
    max_examples=examples(60),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=yaml_documents(), format=st.sampled_from(["chat2graph", "mcp-config"]))
def test_any_yaml_with_aliases_ends_in_an_answer(
    tmp_path: Path, toolctl: Toolctl, document: str, format: str
) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(document)
    (tmp_path / "reg").mkdir(exist_ok=True)
    result = toolctl("import", "-r", str(tmp_path / "reg"), format, str(path))
    assert result.returncode in (0, 2, 3), result.stderr[:500]
    assert "internal error" not in result.stderr and len(result.stderr) < 20_000
    for written in (tmp_path / "reg").rglob("*.toml"):
        written.unlink()


def test_a_huge_error_line_is_cut(tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "reg").mkdir()
    result = toolctl("show", "-r", str(tmp_path / "reg"), "x" * 100_000)
    assert result.returncode == 4, result.stderr[:300]
    assert "more characters)" in result.stderr
    assert all(len(line) < 2200 for line in result.stderr.splitlines())


def test_a_bundle_member_too_big_is_refused_before_it_is_unpacked(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    import io
    import tarfile

    from toolctl.interchange.trustgraph import MAX_BUNDLE_MEMBER

    with tarfile.open(tmp_path / "bomb.tgx", "w:gz") as bundle:
        member = tarfile.TarInfo("config/tool/x.json")
        member.size = MAX_BUNDLE_MEMBER + 1
        bundle.addfile(member, io.BytesIO(b" " * member.size))
    (tmp_path / "R").mkdir()
    done = toolctl("import", "trustgraph", "bomb.tgx", "-r", "R", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        f"toolctl: error: bomb.tgx:config/tool/x.json: {MAX_BUNDLE_MEMBER + 1:,} bytes; "
        "a config item of a bundle holds at most 16 MiB\n",
    )
