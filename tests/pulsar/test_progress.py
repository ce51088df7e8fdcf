"""A Pulsar call that no worker answers says so on a terminal after ~2 s, and stays silent
when a worker answers (or beside --json); through a pseudo-terminal, as a person sees it."""

from __future__ import annotations

import json

from tests.pulsar.pulsar_support import Project, StartWorker
from tests.terminal import plain, run_on_terminal

WAITING = "no worker has answered on"


def test_no_worker_yet_is_said_on_the_terminal(project: Project) -> None:
    screen = run_on_terminal(
        "run", "hello", "--arg", "name=ada", "--timeout", "4", "-r", str(project.registry),
        cwd=project.root,
    )  # fmt: skip
    assert screen.returncode == 124
    text = plain(screen.text)
    assert f"{WAITING} {project.request_queue('hello')} yet…" in text
    assert text.rstrip().splitlines()[-1].startswith("toolctl: error: ")


def test_nothing_is_said_beside_json(project: Project) -> None:
    screen = run_on_terminal(
        "run", "hello", "--arg", "name=ada", "--timeout", "3", "--json",
        "-r", str(project.registry), cwd=project.root,
    )  # fmt: skip
    assert screen.returncode == 124
    assert WAITING not in screen.text
    assert json.loads(plain(screen.text).split("toolctl: error:")[0])["error_code"] == "timed_out"


def test_an_answer_in_time_shows_no_wait(project: Project, workers: StartWorker) -> None:
    workers("hello")
    screen = run_on_terminal(
        "run", "hello", "--arg", "name=ada", "--user", "bob", "-r", str(project.registry),
        cwd=project.root,
    )  # fmt: skip
    assert screen.returncode == 0
    assert WAITING not in screen.text
    assert plain(screen.text).splitlines()[-1] == "hello ada from bob"
