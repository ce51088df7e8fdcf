"""Crash reports: one file per crash, named uniquely, at the path printed."""

from __future__ import annotations

import os
from pathlib import Path

from toolctl.records.crash import write_crash_report as _write_crash_report


def test_crashes_in_one_second_leave_one_report_each(tmp_path: Path) -> None:
    paths = []
    for n in range(5):
        try:
            raise RuntimeError(f"crash {n}")
        except RuntimeError:
            paths.append(_write_crash_report(["run", f"t{n}"]))
    assert len(set(paths)) == 5
    for n, path in enumerate(paths):
        text = Path(path).read_text()
        assert f"toolctl run t{n}" in text and f"RuntimeError: crash {n}" in text
    assert all(str(tmp_path / "home/state/toolctl/crash") in p for p in paths)
    # yours alone, as the run history is: the command line holds --arg values
    assert {os.stat(p).st_mode & 0o777 for p in paths} == {0o600}
