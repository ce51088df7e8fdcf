"""The table of runtimes (toolctl/runtimes.py): what the rest of toolctl derives runtimes from."""

from __future__ import annotations

import tomllib
from pathlib import Path

from toolctl.models import Service, Tool, normalise
from toolctl.runtimes import BY_NAME, RUNTIMES, SERVICE_SECTIONS, TOOL_SECTIONS, import_dotted

ROOT = Path(__file__).resolve().parents[1]


def test_each_row_names_the_runner_its_entry_point_registers() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    registered = project["project"]["entry-points"]["toolctl.runners"]
    rows = {row.name: row.runner for row in RUNTIMES}
    assert {name: registered[name] for name in rows if name in registered} == rows
    # other entry points are runtimes without descriptor sections (runtime = "NAME")


def test_each_section_of_the_table_is_a_field_of_the_descriptor_models() -> None:
    for name in TOOL_SECTIONS:
        assert (
            Tool.model_fields[name].annotation
            == import_dotted(str(BY_NAME[name].tool_model)) | None
        )
    for name in SERVICE_SECTIONS:
        assert (
            Service.model_fields[name].annotation
            == import_dotted(str(BY_NAME[name].service_model)) | None
        )


def test_a_service_s_runtime_is_its_section_and_lists_its_endpoint() -> None:
    service = Service.model_validate(
        {
            "name": "q",
            "pulsar": {
                "request_queue": "non-persistent://a/b/c",
                "response_queue": "non-persistent://a/b/d",
            },
        }
    )
    assert service.runtime == "pulsar"
    assert normalise("service", service)["transport"] == "pulsar"  # as `show --json` prints it
    data = service.model_dump(mode="json")
    assert BY_NAME["pulsar"].endpoint(data["pulsar"]) == "non-persistent://a/b/c"


def test_the_table_imports_neither_runners_nor_pydantic() -> None:
    import subprocess
    import sys

    code = (
        "import sys, toolctl.runtimes; "
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'toolctl.runners'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
