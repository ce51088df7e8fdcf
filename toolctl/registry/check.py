"""What `toolctl check` computes: every problem, with --strict applied, and the verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolctl.registry.index import Registry
from toolctl.registry.lint import SHADOW
from toolctl.settings import Settings


@dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    file: str
    line: int
    message: str


@dataclass(frozen=True)
class CheckResult:
    findings: list[Finding]
    files: int
    definitions: int

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.severity == "warning" for f in self.findings)

    @property
    def ok(self) -> bool:
        return self.errors == 0

    def summary(self) -> str:
        verdict = "ok" if self.ok else "failed"
        return (
            f"check {verdict}: {self.errors} error(s), {self.warnings} warning(s) "
            f"in {self.files} file(s), {self.definitions} definition(s)"
        )

    def to_json(self, show_path: Callable[[str], str]) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": self.errors,
            "warnings": self.warnings,
            "files": self.files,
            "definitions": self.definitions,
            "problems": [
                {
                    "severity": f.severity,
                    "code": f.code,
                    "file": show_path(f.file),
                    "line": f.line,
                    "message": f.message,
                }
                for f in self.findings
            ],
        }


def run_check(settings: Settings) -> CheckResult:
    """Refresh the index from every file and report its problems (shadows are errors if strict)."""
    registry = Registry.open(settings, full=True)
    findings = []
    for report in registry.reports():
        severity = report.problem.severity
        if settings.strict and report.code == SHADOW:
            severity = "error"
        p = report.problem
        findings.append(Finding(severity, report.code, p.file, p.line, p.message))
    files, definitions = registry.counts()
    return CheckResult(findings, files, definitions)
