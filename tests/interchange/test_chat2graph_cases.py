"""`import chat2graph --as-loaded` + `recommend` answer what Chat2Graph itself answers.

The cases were computed by Chat2Graph's own loader and ``recommend_subgraph`` on its
default agent file (see ``data/README.md``); that file is read from ``../shared/data``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Toolctl
from tests.interchange.test_shared_data import SHARED
from toolctl.graph import Toolkit, recommend
from toolctl.interchange import read_import
from toolctl.interchange.slugs import slug

CASES = json.loads((Path(__file__).parent / "data" / "chat2graph_recommend_cases.json").read_text())
DEFAULT_AGENT = SHARED / "chat2graph" / "app_core_sdk_chat2graph.yml"


def toolkit(as_loaded: bool) -> Toolkit:
    if not DEFAULT_AGENT.is_file():
        pytest.skip(f"{DEFAULT_AGENT} is absent (CI has ../shared beside the checkout)")
    imported = read_import("chat2graph", [DEFAULT_AGENT], as_loaded=as_loaded)
    actions = [e.definition.data for e in imported.entries if e.definition.kind == "action"]
    tools = {e.definition.name: "local" for e in imported.entries if e.definition.kind == "tool"}
    return Toolkit.from_data(actions, tools, [])


def answer(kit: Toolkit, case: dict[str, Any]) -> dict[str, Any]:
    found = recommend(kit, [slug(s) for s in case["start"]], case["hops"], case["threshold"])
    data = found.to_json()
    return {
        "actions": [a["name"] for a in data["actions"]],
        "tools": [t["name"] for t in data["tools"]],
        "edges": sorted([e["from"], e["to"], e["kind"]] for e in data["edges"]),
    }


def expected(case: dict[str, Any]) -> dict[str, Any]:
    return {
        "actions": sorted(slug(a) for a in case["actions"]),
        "tools": sorted(slug(t) for t in case["tools"]),
        "edges": sorted([slug(u), slug(v), kind] for u, v, kind in case["edges"]),
    }


def test_as_loaded_answers_every_case_as_chat2graph_does() -> None:
    kit = toolkit(as_loaded=True)
    assert len(CASES) == 330
    wrong = [c for c in CASES if answer(kit, c) != expected(c)]
    assert wrong == []


def test_separate_chains_stay_the_default_and_do_differ() -> None:
    kit = toolkit(as_loaded=False)
    differ = sum(answer(kit, c) != expected(c) for c in CASES)
    assert differ == 158
    for case in CASES:
        if case["hops"] == 0:  # without hops only the start's own Call edges count
            assert answer(kit, case) == expected(case)


def test_an_action_naming_an_undefined_tool_points_at_as_loaded(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    config = tmp_path / "agent.yml"
    config.write_text(
        "tools:\n  - {name: Known, type: LOCAL_TOOL, module_path: app.tools}\n"
        "actions:\n  - {name: act, tools: [{name: Known}, {name: Phantom}]}\n"
    )
    refused = toolctl("import", "chat2graph", str(config), "-r", str(tmp_path / "reg"))
    assert refused.returncode == 3
    assert "action 'act' calls unknown tool 'Phantom'" in refused.stderr
    assert "'toolctl import chat2graph --as-loaded' imports the file as it does" in refused.stderr
    loaded = toolctl(
        "import", "chat2graph", str(config), "--as-loaded", "-r", str(tmp_path / "reg")
    )
    assert loaded.returncode == 0, loaded.stderr


DUPLICATES = {
    "tool": (
        "tools:\n"
        "  - {name: Reader, type: LOCAL_TOOL, module_path: app.first}\n"
        "  - {name: Reader, type: LOCAL_TOOL, module_path: app.second}\n"
        "actions:\n  - {name: act, tools: [{name: Reader}]}\n"
        "toolkit:\n  - [{name: act}]\n"
    ),
    "action": (
        "tools:\n  - {name: Reader, type: LOCAL_TOOL, module_path: app.first}\n"
        "actions:\n  - {name: act, desc: first, tools: [{name: Reader}]}\n"
        "  - {name: act, desc: second, tools: [{name: Reader}]}\n"
        "toolkit:\n  - [{name: act}]\n"
    ),
}


@pytest.mark.parametrize("kind", sorted(DUPLICATES))
def test_a_name_given_twice_differently_is_refused_or_the_later_kept_as_loaded(
    toolctl: Toolctl, tmp_path: Path, kind: str
) -> None:
    """A tool or action given twice, differently, was imported at exit 0 without a word,
    and `--as-loaded` kept the first tool where Chat2Graph's loader keeps the last (the
    imported tool ran another module). Refused (exit 3) as the other imports refuse it;
    with --as-loaded the later one is kept, as Chat2Graph keeps it, and that is said."""
    config = tmp_path / "agent.yml"
    config.write_text(DUPLICATES[kind])
    refused = toolctl("import", "chat2graph", str(config), "-r", str(tmp_path / "reg"))
    assert refused.returncode == 3
    assert f"{kind} '{'Reader' if kind == 'tool' else 'act'}' is given twice, differently" in (
        refused.stderr
    )
    assert not (tmp_path / "reg").exists() or not any((tmp_path / "reg").rglob("*.toml"))
    loaded = toolctl(
        "import", "chat2graph", str(config), "--as-loaded", "-r", str(tmp_path / "reg")
    )
    assert loaded.returncode == 0, loaded.stderr
    assert "the later one is kept, as Chat2Graph's loader keeps it" in loaded.stderr
    written = "".join(p.read_text() for p in (tmp_path / "reg").rglob("*.toml"))
    assert ("app.second" if kind == "tool" else '"second"') in written
    assert ("app.first" not in written) if kind == "tool" else ('"first"' not in written)


def test_one_name_as_a_local_tool_and_an_mcp_server_is_refused(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """It became a local tool and an MCP service, and the action's Call edge to the local
    tool was dropped without a word."""
    config = tmp_path / "agent.yml"
    config.write_text(
        "tools:\n  - {name: Schema, type: LOCAL_TOOL, module_path: app.schema}\n"
        "  - {name: Schema, type: MCP, mcp_transport_config: {transport_type: STDIO, "
        "command: npx}}\n"
        "actions:\n  - {name: act, tools: [{name: Schema}]}\n"
    )
    for extra in ((), ("--as-loaded",)):
        done = toolctl("import", "chat2graph", str(config), *extra, "-r", str(tmp_path / "r"))
        assert done.returncode == 3
        assert "tool 'Schema' is given twice, as a LOCAL_TOOL and as an MCP server" in done.stderr


def test_a_secret_an_mcp_server_is_given_twice_is_written_nowhere(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A server's key in its env and again in its args: each value was judged on its own,
    and the argument no rule knows kept it in clear (as `mcp add` and `import mcp-config`
    did); every place it stands is its reference."""
    secret = "mypw4321"
    config = tmp_path / "agent.yml"
    config.write_text(
        "tools:\n  - {name: Browser, type: MCP, mcp_transport_config: {transport_type: STDIO,"
        f" command: npx, args: [server, --k, {secret}], env: {{API_KEY: {secret}}}}}}}\n"
    )
    done = toolctl("import", "chat2graph", str(config), "-r", str(tmp_path / "reg"))
    assert done.returncode == 0, done.stderr
    written = "".join(p.read_text() for p in (tmp_path / "reg").rglob("*.toml"))
    assert secret not in written and written.count("${env:BROWSER_API_KEY}") == 2, written
