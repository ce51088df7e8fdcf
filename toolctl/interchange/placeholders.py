"""The variables MCP clients fill into their server configs, as toolctl's ``${env:NAME}``.

Each client has its own syntax: ``${VAR}`` and ``${VAR:-default}`` (Claude Code, Kiro),
``${env:VAR}`` (Cursor, VS Code, Windsurf, Roo Code), ``$VAR`` (Gemini CLI),
``${{ secrets.VAR }}`` (Continue), VS Code's ``${input:ID}`` (a value the editor prompts
for: it becomes the variable ``ID`` in upper case, its description the hint) and the
predefined ``${workspaceFolder}``, ``${workspaceFolderBasename}``, ``${userHome}`` and
``${pathSeparator}``, which are filled in here (the workspace is the folder the config
belongs to). Whatever else a client would compute (``${file:...}``, ``${command:...}``)
becomes a variable too, so no placeholder reaches a server as text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolctl.interchange.secrets import Scope
from toolctl.secret_names import words

_PATTERN = re.compile(  # each part bounded: from every "${" an unbounded one ran to the
    # end of a value with no "}" (a 200 KB value: 19 s; 2 MB: past five minutes)
    r"\$\{\{\s*(?:secrets|inputs)\.(?P<continue>[A-Za-z_][A-Za-z0-9_]{0,255})\s*\}\}"
    r"|\$\{input:(?P<input>[^}]{1,1024})\}"
    r"|\$\{env:(?P<env>[A-Za-z_][A-Za-z0-9_]{0,255})\}"
    r"|\$\{(?P<predefined>workspaceFolder|workspaceRoot|workspaceFolderBasename|userHome"
    r"|pathSeparator|/)\}"
    r"|\$\{(?P<var>[A-Za-z_][A-Za-z0-9_]{0,255})(?P<default>:-[^}]{0,1024})?\}"
    r"|\$\{(?P<other>[A-Za-z]{1,64}:[^}]{0,1024})\}"
)
_DOLLAR = re.compile(r"\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class Placeholders:
    """What a config's placeholders resolve to: its workspace, the user's home, VS Code's
    ``inputs`` by id; ``notes`` collects what the translation had to leave behind."""

    workspace: Path
    home: Path
    inputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    bare_dollar: bool = False
    """``$VAR`` inside a value (Gemini CLI); otherwise only a whole value ``$VAR``."""
    notes: list[str] = field(default_factory=list)

    def translate(self, value: str, scope: Scope, where: str) -> str:
        """``value`` with client placeholders as ``${env:NAME}`` or filled in."""
        text = _PATTERN.sub(lambda m: self._one(m, scope, where), value)
        if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", value) or self.bare_dollar:
            text = _DOLLAR.sub(lambda m: "${env:" + m.group("bare") + "}", text)
        return text

    def _one(self, match: re.Match[str], scope: Scope, where: str) -> str:
        groups = match.groupdict()
        place = f"server '{scope.foreign}', {where}"
        if groups["predefined"] is not None:
            return self._predefined(groups["predefined"])
        if groups["input"] is not None:
            return self._input(groups["input"], place, scope)
        if groups["other"] is not None:
            variable = scope.vault.variable(scope.service, "VALUE", groups["other"], place)
            computed = re.split(r":[-=?+]", groups["other"])[0]  # a default is never said
            scope.vault.exports[variable] = f"{place} (the client computed it: ${{{computed}}})"
            return "${env:" + variable + "}"
        name = groups["continue"] or groups["env"] or groups["var"]
        if groups["default"]:  # never quoted: a default is often the secret itself
            self.notes.append(
                f"server '{scope.foreign}': {where}: ${{{name}}} has a default toolctl does "
                f"not apply; {name} must be set"
            )
        scope.vault.ask(name, place)
        return "${env:" + name + "}"

    def _predefined(self, name: str) -> str:
        if name in ("workspaceFolder", "workspaceRoot"):
            return str(self.workspace)
        if name == "workspaceFolderBasename":
            return self.workspace.name
        if name == "userHome":
            return str(self.home)
        return "/"

    def _input(self, key: str, place: str, scope: Scope) -> str:
        variable = "_".join(words(key)) or "INPUT"
        given = self.inputs.get(key) or {}
        hint = str(given.get("description") or "").strip()
        secret = " (a password)" if given.get("password") else ""
        shown = f": {hint}" if hint else ""
        scope.vault.exports.setdefault(variable, f"{place}: VS Code input '{key}'{secret}{shown}")
        return "${env:" + variable + "}"
