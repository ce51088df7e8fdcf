"""Every shell command in the README, the tutorials and the how-to guides listed runs as shown.

Each document is one bash session in a temporary home (``~`` is a fresh directory, so is
every XDG directory): its ```sh blocks run in order, command by command, so `cd`, `export`
and the files a command writes carry over. A command must exit 0, or N when its line ends
with ``# exit N``; ``# prints: TEXT`` checks that its stdout holds TEXT. An HTML comment
right before a block steers it (invisible when the Markdown is rendered):

    <!-- doctest: file=PATH -->      the block is that file's content, written as shown
    <!-- doctest: append=PATH -->    ... appended to that file
    <!-- doctest: skip REASON -->    not run here (the reason names the test that runs it)
    <!-- doctest: requires=WHAT -->  needs pulsar (the embedded broker), podman or npm:
                                      skipped without it, failed under TOOLCTL_REQUIRE_ENGINES=1
    <!-- doctest: start=sample -->   (the document's first line) start in ~/toolctl, a copy of
                                      this repository's sample project, not in an empty directory

A ``requires`` comment before the first block applies to the whole document. `toolctl` is
this checkout's (the dev environment first on PATH); whatever a document starts in the
background is stopped at the end (`toolctl service down --all`).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCUMENTS = [
    "README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "tutorials").glob("*.md")),
    "docs/how-to/update-a-tool.md",
    "docs/how-to/announce.md",
    "docs/how-to/mcp-clients.md",
    "docs/how-to/shell-completion.md",
    "docs/how-to/python.md",
]
BLOCK = re.compile(
    r"(?:<!-- doctest: (?P<directive>[^>]*?) -->\n)?```(?P<lang>[\w-]*)\n(?P<body>.*?)```\n",
    re.S,
)
SAMPLE = ["toolctl.toml", "registry", "plugins"]


@dataclass
class Block:
    lang: str
    body: str
    directive: str = ""


@dataclass
class Command:
    text: str
    exit_code: int = 0
    prints: str | None = None
    line: str = field(default="")


def blocks(text: str) -> list[Block]:
    return [
        Block(m["lang"], m["body"], (m["directive"] or "").strip()) for m in BLOCK.finditer(text)
    ]


def commands(body: str) -> list[Command]:
    """The commands of a sh block: `\\` continues a line, a heredoc runs to its delimiter."""
    found: list[Command] = []
    lines = body.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        text = [line]
        while text[-1].endswith("\\") and index < len(lines):
            text.append(lines[index])
            index += 1
        head = "\n".join(text)  # the command's own lines: where its `# exit`/`# prints` are
        heredoc = re.search(r"<<-?\s*'?(\w+)'?", text[-1])
        if heredoc:
            while index < len(lines):
                text.append(lines[index])
                index += 1
                if text[-1].strip() == heredoc.group(1):
                    break
        expected = re.search(r"#\s*exit (\d+)\b", head)
        prints = re.search(r"#\s*prints: (.*)$", head, re.M)
        found.append(
            Command(
                "\n".join(text),
                int(expected.group(1)) if expected else 0,
                prints.group(1).strip() if prints else None,
                text[0].strip(),
            )
        )
    return found


def available(what: str) -> str | None:
    """Why ``what`` is missing here, or None."""
    if what == "podman":
        if shutil.which("podman") is None:
            return "podman is not installed"
        done = subprocess.run(
            ["podman", "image", "exists", "localhost/toolctl-busybox:latest"], capture_output=True
        )
        return None if done.returncode == 0 else "the sample image is not built"
    if what == "npm":
        return None if shutil.which("npx") else "npx is not installed"
    if what == "pulsar":
        from toolctl.pulsar.broker import binary

        try:
            binary()
        except Exception as exc:
            return f"no pulsar-lite broker: {exc}"
        return None
    return f"unknown requirement {what!r}"


def unavailable(what: str) -> None:
    reason = available(what)
    if reason is None:
        return
    if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
        pytest.fail(f"{what}: {reason}")
    pytest.skip(f"{what}: {reason}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def script(document: list[Block], results: Path) -> tuple[str, list[Command]]:
    """The bash script of a document, and its commands in order."""
    parts = ["set -u"]
    ran: list[Command] = []
    for block in document:
        directive = block.directive
        if directive.startswith(("file=", "append=")):
            kind, _, path = directive.partition("=")
            redirect = ">" if kind == "file" else ">>"
            parts.append(f"mkdir -p \"$(dirname '{path}')\"")
            parts.append(f"cat {redirect} '{path}' <<'DOCTEST_END'\n{block.body}DOCTEST_END")
            continue
        if block.lang != "sh" or directive.startswith("skip"):
            continue
        if directive.startswith("requires="):
            reason = available(directive.partition("=")[2])
            if reason is not None:
                if os.environ.get("TOOLCTL_REQUIRE_ENGINES") == "1":
                    pytest.fail(f"{directive}: {reason}")
                continue
        for command in commands(block.body):
            n = len(ran)
            ran.append(command)
            parts.append(f"{{ {command.text}\n}} >{results}/out.{n} 2>{results}/err.{n} </dev/null")
            parts.append(f"echo $? >{results}/rc.{n}")
    parts.append("toolctl service down --all >/dev/null 2>&1 || true")
    return "\n".join(parts) + "\n", ran


def start_in(tmp_path: Path, home: Path, text: str) -> Path:
    if text.startswith("<!-- doctest: start=sample -->"):  # a clone in ~/toolctl
        project = home / "toolctl"
        for name in SAMPLE:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(
                    source, project / name, ignore=shutil.ignore_patterns("__pycache__")
                )
            else:
                project.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, project / name)
        return project
    here = tmp_path / "start"
    here.mkdir()
    return here


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_command_of_the_document_runs_as_shown(tmp_path: Path, name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    document = blocks(text)
    whole = re.search(r"<!-- doctest: requires=(\w+) -->", text.split("```", 1)[0])
    if whole:
        unavailable(whole.group(1))
    results = tmp_path / "results"
    results.mkdir()
    body, ran = script(document, results)
    assert ran, f"{name} shows no command to run"
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TOOLCTL_")},
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "TOOLCTL_PULSAR_URL": f"pulsar://127.0.0.1:{free_port()}",
        "NO_COLOR": "1",
    }
    for keep in ("TOOLCTL_REQUIRE_ENGINES", "TOOLCTL_CONTAINER_ENGINE"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", body],
        cwd=start_in(tmp_path, home, text),
        env=env,
        timeout=540,
        check=False,
    )
    for n, command in enumerate(ran):
        code_file = results / f"rc.{n}"
        assert code_file.exists(), f"{name}: `{command.line}` never ran"
        code = int(code_file.read_text())
        out = (results / f"out.{n}").read_text()
        err = (results / f"err.{n}").read_text()
        said = f"{name}: `{command.line}` exited {code}\nstdout:\n{out}\nstderr:\n{err}"
        assert code == command.exit_code, said
        assert "Traceback" not in err, said
        if command.prints is not None:
            assert command.prints in out, said


def test_the_harness_reads_commands_as_a_shell_would() -> None:
    found = commands(
        "# a comment\ntoolctl a   # exit 3\ntoolctl b \\\n  --x  # prints: hi\n"
        "cat > f <<'EOF'\nline\nEOF\n"
    )
    assert [(c.text, c.exit_code, c.prints) for c in found] == [
        ("toolctl a   # exit 3", 3, None),
        ("toolctl b \\\n  --x  # prints: hi", 0, "hi"),
        ("cat > f <<'EOF'\nline\nEOF", 0, None),
    ]
