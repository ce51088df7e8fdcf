"""Names other systems accept: a tool named ``a.b`` goes to OpenAI as ``a_b`` (one
reversible rule), and the name a model calls comes back to the tool through `run` and
`serve`; first-wins still decides when the mapped name is itself a tool's name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx

from tests.conftest import Toolctl, write_files
from tests.serve.serve_support import alive, wait_for

ECHO = f'["{sys.executable}", "-c", "import json,sys; print(json.load(sys.stdin)[\'text\'])"]'
REGISTRY = {
    "tools.toml": f"""
        [[tool]]
        name = "text.echo"
        description = "Echo"
        [tool.local]
        command = {ECHO}
        [[tool.arguments]]
        name = "text"
        type = "string"
        """
}


def test_a_dotted_name_is_exported_mapped_and_runs_by_the_mapped_name(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    reg = str(write_files(tmp_path / "reg", REGISTRY))
    exported = toolctl("export", "--format", "openai", "-r", reg)
    assert exported.returncode == 0 and exported.stderr == ""
    assert [f["function"]["name"] for f in json.loads(exported.stdout)] == ["text_echo"]
    ran = toolctl("run", "text_echo", "-r", reg, "--arg", "text=called by a model")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "called by a model\n"
    shown = toolctl("show", "text_echo", "-r", reg, "--json")  # as `run` takes it
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["name"] == "text.echo"
    unknown = toolctl("run", "text_echoes", "-r", reg)
    assert unknown.returncode == 4


def test_a_look_alike_name_on_disk_is_not_taken_by_the_mapping(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """'text_echo' defined after 'text.echo' is a look-alike: quarantined, so the mapped
    name still means 'text.echo' (first wins), never the later definition."""
    files = {
        **REGISTRY,
        "z.toml": REGISTRY["tools.toml"]
        .replace('"text.echo"', '"text_echo"')
        .replace("Echo", "Impostor"),
    }
    reg = str(write_files(tmp_path / "reg", files))
    ran = toolctl("run", "text_echo", "-r", reg, "--arg", "text=x")
    assert ran.returncode == 3 and "confusable" in ran.stderr
    exported = json.loads(toolctl("export", "--format", "openai", "-r", reg).stdout)
    assert [(f["function"]["name"], f["function"]["description"]) for f in exported] == [
        ("text_echo", "Echo")
    ]


def test_serve_accepts_the_mapped_name(toolctl: Toolctl, tmp_path: Path) -> None:
    reg = str(write_files(tmp_path / "reg", REGISTRY))
    started = toolctl("serve", "--detach", "--port", "0", "-r", reg, "--json")
    assert started.returncode == 0, started.stderr
    record = json.loads(started.stdout)
    try:
        answer = httpx.post(
            f"{record['url']}/run_tool", json={"tool_id": "text_echo", "params": {"text": "s"}}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["output"] == "s\n" or answer.json()["output"] == "s"
    finally:
        toolctl("service", "down", "serve")
        assert wait_for(lambda: not alive(record["pid"]))


def test_two_tools_with_one_function_name_are_not_both_exported() -> None:
    """Names in force never fold alike, so this needs data that skipped the registry:
    the second is refused with a note naming the first, never exported under its name."""
    from toolctl.interchange.functions import openai_functions

    schema = {"type": "object", "properties": {}}
    functions, notes = openai_functions(
        [{"name": "a.b", "schema": schema}, {"name": "a_b", "schema": schema}]
    )
    assert [f["function"]["name"] for f in functions] == ["a_b"]
    assert notes == ["left out tool 'a_b': its function name 'a_b' is already that of tool 'a.b'"]
