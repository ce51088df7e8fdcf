"""``calls.resolve``: a resolved tool carries what its runner needs, the registry left behind.

A runner never opens the registry, so the ToolSpec holds the service's descriptor and the
files that define the tool and its service: a relative ``cwd`` of a service is relative to
*its* file, which need not be the tool's.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write_files
from toolctl.calls import resolve
from toolctl.registry.index import Registry
from toolctl.settings import Settings

FILES = {
    "services/api.toml": """
    [[service]]
    name = "api"
    [service.http]
    start = ["python3", "server.py", "--port", "{port}"]
    cwd = "../server"
    """,
    "tools/tools.toml": """
    [[tool]]
    name = "ask"
    service = "api"
    [tool.http]
    path = "/ask"

    [[tool]]
    name = "echo"
    [tool.local]
    command = ["echo"]
    """,
}


def test_a_tool_carries_its_service_and_the_files_of_both(tmp_path: Path) -> None:
    registry = write_files(tmp_path / "registry", FILES)
    spec = resolve(Registry.open(Settings.load([registry])), "ask")
    assert spec.runtime == "http" and spec.service is not None
    assert spec.service["http"]["cwd"] == "../server"
    assert spec.source == registry / "tools/tools.toml"
    assert spec.service_source == registry / "services/api.toml"
    assert (spec.base_dir, spec.service_dir) == (registry / "tools", registry / "services")


def test_a_tool_without_a_service_has_only_its_own_file(tmp_path: Path) -> None:
    registry = write_files(tmp_path / "registry", FILES)
    spec = resolve(Registry.open(Settings.load([registry])), "echo")
    assert spec.service is None and spec.service_source is None
    assert spec.service_dir == spec.base_dir == registry / "tools"


def test_arguments_that_are_no_object_are_invalid_arguments(tmp_path: Path) -> None:
    """A model's arguments are whatever its JSON held: a list of pairs ran as an object,
    a string or non-text keys raised a bare ValueError or TypeError out of `Caller.call`."""
    import pytest

    from toolctl.calls import Caller
    from toolctl.errors import InvalidArguments

    write_files(tmp_path / "reg", FILES)
    settings = Settings.load([tmp_path / "reg"])
    with Caller(settings, Registry.open(settings)) as caller:
        for given, said in (
            ([["text", "a"]], "arguments must be a JSON object, got an array"),
            ("text=a", "arguments must be a JSON object, got a string"),
            (5, "arguments must be a JSON object, got a number"),
            ({1: "a"}, "argument names must be strings"),
        ):
            with pytest.raises(InvalidArguments) as raised:
                caller.call("echo", given)  # type: ignore[arg-type]
            assert str(raised.value) == f"tool 'echo': {said}"
