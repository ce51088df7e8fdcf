"""`check` over the corpus of the nastiest registry files found so far (tests/corpus/).

Each file says on its first line the exit code `check` must give (``# expect: N``); none
may end in exit 70 or a traceback, and `list --json` must still print JSON.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, Toolctl

CORPUS = sorted((ROOT / "tests/corpus").glob("*.toml"))


def _expected(path: Path) -> int:
    match = re.match(rb"# expect: (\d+)", path.read_bytes())
    assert match, f"{path.name} must start with '# expect: N'"
    return int(match.group(1))


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 10


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_check_over_the_corpus(path: Path, tmp_path: Path, toolctl: Toolctl) -> None:
    (tmp_path / "r").mkdir()
    shutil.copy(path, tmp_path / "r" / path.name)
    check = toolctl("check", "--json", "-r", "r")
    listing = toolctl("list", "--json", "-r", "r")
    for result in (check, listing):
        assert result.returncode != 70, result.stderr
        assert "Traceback" not in result.stdout + result.stderr
    assert check.returncode == _expected(path), check.stdout
    report = json.loads(check.stdout)
    assert report["ok"] is (check.returncode == 0)
    assert listing.returncode == 0, listing.stderr
    json.loads(listing.stdout)
