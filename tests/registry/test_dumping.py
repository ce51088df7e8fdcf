"""What toolctl writes into a registry is laid out as the docs show it: each entry a
``[[kind]]`` block, however short, so that a hand edit adding a table to it still loads."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Toolctl, examples
from toolctl.registry.dumping import registry_toml

WORDS = st.text("abcxyz-_", min_size=1, max_size=8)
VALUES = st.recursive(
    st.integers() | st.text(max_size=10) | st.booleans(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(WORDS, inner, max_size=3),
    max_leaves=8,
)
TABLES = st.dictionaries(WORDS, VALUES, max_size=4)


@settings(max_examples=examples(100), deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["tool", "service", "action", "group"]),
        st.lists(TABLES, min_size=1, max_size=3),
    )
)
def test_any_entries_read_back_as_written(document: dict[str, list[dict[str, Any]]]) -> None:
    text = registry_toml(document)
    assert tomllib.loads(text) == document
    for kind, tables in document.items():
        assert text.count(f"[[{kind}]]\n") == len(tables)
        assert f"{kind} = [" not in text


def test_a_short_imported_service_is_a_block_a_hand_edit_can_extend(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    assert toolctl("init", cwd=tmp_path).returncode == 0
    config = {"mcpServers": {"plain": {"url": "https://example.com/mcp"}}}
    (tmp_path / "m.json").write_text(json.dumps(config))
    done = toolctl("import", "mcp-config", "m.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = tmp_path / "registry" / "services" / "plain.toml"
    assert (
        written.read_text()
        == '[[service]]\nname = "plain"\n\n[service.mcp]\nurl = "https://example.com/mcp"\n'
    )
    with written.open("a") as handle:
        handle.write('[service.mcp.headers]\nAuthorization = "Bearer ${env:PLAIN_TOKEN}"\n')
    checked = toolctl("check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
