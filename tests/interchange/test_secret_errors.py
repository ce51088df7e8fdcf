"""A secret in what an import refuses is never part of the error that refuses it (an entry
without a name is described by its keys, a URL that does not parse is shown without its
password, query or fragment), and the forms of secrets people write are never copied."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Toolctl, write_files


def _nowhere(secret: str, done: object, registry: Path) -> None:
    shown = getattr(done, "stdout", "") + getattr(done, "stderr", "")
    assert secret not in shown
    assert all(secret not in p.read_text() for p in registry.rglob("*") if p.is_file())


def test_a_chat2graph_tool_without_a_name_is_told_by_its_keys(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path,
        {
            "x.yml": "tools:\n  - type: MCP\n    mcp_transport_config: {transport_type: STDIO, "
            'command: npx, env: {OPENAI_API_KEY: "sk-proj-Hunter95PwAAAA"}, '
            'headers: {Authorization: "Bearer Hunter93Pw"}}\n'
        },
    )
    (tmp_path / "R").mkdir()
    done = toolctl("import", "chat2graph", "x.yml", "-r", "R", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "toolctl: error: x.yml: a tool without a name (it holds: mcp_transport_config, type)\n",
    )
    _nowhere("Hunter9", done, tmp_path / "R")


def test_a_url_that_does_not_parse_is_shown_without_its_password(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    url = "http://admin:Hunter8Pw@[::1/mcp?token=Hunter7Pw"
    write_files(tmp_path, {"v6.json": json.dumps({"mcpServers": {"v6": {"url": url}}})})
    (tmp_path / "R").mkdir()
    imported = toolctl("import", "mcp-config", "v6.json", "-r", "R", cwd=tmp_path)
    assert imported.returncode == 3 and "http://***@[::1/mcp?***" in imported.stderr
    _nowhere("Hunter", imported, tmp_path / "R")
    added = toolctl("mcp", "add", "s", "--url", url, "-r", "R", cwd=tmp_path)
    assert added.returncode != 0 and "http://***@[::1/mcp?***" in added.stderr
    _nowhere("Hunter", added, tmp_path / "R")


def test_the_forms_of_secrets_people_write_become_references(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {
        "upper": {"url": "HTTPS://admin:Hunter5Pw@api.example.com/mcp"},
        "remote": {
            "command": "npx",
            "args": [
                "mcp-remote",
                "https://x.example/mcp",
                "--header=Authorization: Bearer Hunter28Pw",
            ],
        },
        "conn": {"command": "srv", "env": {"CONN": "Server=db;User Id=sa;Password=Hunter26Pw;"}},
        "frag": {"url": "https://h.example/mcp#token=Hunter15Pw"},
    }
    write_files(tmp_path, {"leak.json": json.dumps({"mcpServers": servers})})
    (tmp_path / "R").mkdir()
    done = toolctl("import", "mcp-config", "leak.json", "-r", "R", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _nowhere("Hunter", done, tmp_path / "R")
    for variable in ("UPPER_PASSWORD", "REMOTE_AUTHORIZATION", "CONN_PASSWORD", "FRAG_TOKEN"):
        assert f"export {variable}=..." in done.stdout
