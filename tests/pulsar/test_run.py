"""`toolctl run` over Pulsar: the real CLI and PulsarRunner against the embedded broker."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Toolctl
from tests.pulsar.pulsar_support import Project, StartWorker, first_line, free_port, result_of
from toolctl.calls import resolve as resolve_tool
from toolctl.errors import TimedOut
from toolctl.registry.index import Registry
from toolctl.runners.base import Call, Sink
from toolctl.runners.pulsar import PulsarRunner
from toolctl.settings import Settings


def run(toolctl: Toolctl, project: Project, *args: str) -> tuple[int, str, str]:
    done = toolctl("run", *args, "--registry", str(project.registry), timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_a_call_prints_the_answer(toolctl: Toolctl, project: Project, workers: StartWorker) -> None:
    workers("hello")
    code, out, err = run(toolctl, project, "hello", "--arg", "name=ada", "--user", "bob")
    assert (code, out, err) == (0, "hello ada from bob\n", "")


def test_the_user_defaults_to_the_login_name(
    toolctl: Toolctl, project: Project, workers: StartWorker
) -> None:
    workers("echo")
    done = toolctl(
        "run", "echo", "--json", "--registry", str(project.registry), env={"LOGNAME": "carol"}
    )
    assert done.returncode == 0, done.stderr
    result = result_of(done.stdout)
    assert result["success"] is True
    assert result["transport"] == "pulsar"
    # a JSON answer is data; the tool's config and arguments arrive as objects
    assert result["data"] == {"config": {"style": "plain"}, "arguments": {}, "user": "carol"}


def test_an_error_answer_exits_1_with_its_type_and_message(
    toolctl: Toolctl, project: Project, workers: StartWorker
) -> None:
    workers("fail")
    code, out, err = run(toolctl, project, "fail", "--arg", "why=disk on fire")
    assert code == 1
    assert out == ""
    assert "tool-service-error: boom: disk on fire" in err
    code, out, _ = run(toolctl, project, "fail", "--json")
    assert code == 1
    assert result_of(out)["error"] == "tool-service-error: boom: no reason"


def test_a_handler_calling_sys_exit_is_a_failed_call_and_the_worker_serves_on(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    """sys.exit() or KeyboardInterrupt in a handler ended the serving thread: after
    --concurrency of them the worker answered nothing while it looked alive."""
    workers("fail", "--concurrency", "1")
    for why, told in (("exit", "SystemExit: 3"), ("interrupt", "KeyboardInterrupt")):
        code, _, err = run(toolctl, project, "fail", "--arg", f"why={why}")
        assert code == 1, err
        assert f"tool-service-error: the handler raised {told}" in err
    code, _, err = run(toolctl, project, "fail", "--arg", "why=\x1b[2J\nforged line")
    assert code == 1 and "boom:" in err  # still served, by the one thread there is
    log = next(tmp_path.glob("worker-fail-*.log")).read_text()
    assert "Traceback" not in log and "\x1b" not in log  # what comes off the wire, escaped
    assert not any(line.startswith("forged line") for line in log.splitlines())


def test_a_stream_is_printed_as_it_arrives_and_joined_with_json(
    toolctl: Toolctl, project: Project, workers: StartWorker
) -> None:
    workers("chunks")
    assert run(toolctl, project, "chunks") == (0, "one two three\n", "")
    code, out, _ = run(toolctl, project, "chunks", "--json")
    assert code == 0
    assert result_of(out)["output"] == "one two three"


def test_stream_chunks_reach_the_callback_one_by_one(
    project: Project, workers: StartWorker, pulsar_url: str
) -> None:
    workers("chunks")
    runner, call = _library(project, pulsar_url, "chunks")
    seen: list[str] = []

    class Chunks(Sink):
        def output(self, text: str) -> None:
            seen.append(text)

    try:
        result = runner.run(call._replace(sink=Chunks()))
    finally:
        runner.close()
    assert seen == ["one ", "two ", "three", "\n"]  # the newline leaves a terminal tidy
    assert (result.success, result.output) == (True, "one two three")


def test_a_stream_still_coming_at_the_timeout_keeps_what_came(
    toolctl: Toolctl, project: Project, workers: StartWorker
) -> None:
    """A stream past its caller's timeout was told as "no answer ... or none is
    subscribed", and what had come was dropped (a local tool's timeout keeps its output)."""
    workers("trickle")
    code, out, err = run(toolctl, project, "trickle", "--arg", "chunks=400", "--timeout", "2",
                         "--json")  # fmt: skip
    assert code == 124
    result = result_of(out)
    assert result["error_code"] == "timed_out" and str(result["output"]).startswith("0 1 2 ")
    assert "service 'trickle' was still answering at its 2 s timeout" in err
    assert "none is subscribed" not in err


def test_an_async_handler_answers(toolctl: Toolctl, project: Project, workers: StartWorker) -> None:
    workers("later")
    assert run(toolctl, project, "later", "--arg", "word=soon") == (0, "later soon\n", "")


def test_no_worker_times_out_with_124_naming_the_queue(toolctl: Toolctl, project: Project) -> None:
    code, out, err = run(toolctl, project, "nobody", "--timeout", "0.5")
    assert code == 124
    assert out == ""
    assert "no answer from service 'nobody' within 0.5 s" in err
    assert project.request_queue("nobody") in err
    assert "a non-persistent topic then drops requests" in err
    assert "every worker may be busy" in err and "toolctl worker nobody" in err


def test_a_batch_s_pipelined_calls_that_fail_end_with_the_same_done_event_as_one_call(
    toolctl: Toolctl, project: Project, tmp_path: Path
) -> None:
    """A pipelined call ending in an error reports it as a single call does: the done
    event names the error and how long the call took."""
    batch = tmp_path / "batch.jsonl"
    batch.write_text("{}\n{}\n")
    registry = ("--registry", str(project.registry))
    args = ("nobody", "--timeout", "0.3", "-v", *registry)
    env = {"TOOLCTL_LOG": "json"}
    one = toolctl("run", *args, env=env)
    many = toolctl("run", *args, "--batch", str(batch), "--concurrency", "2", env=env)
    assert (one.returncode, many.returncode) == (124, 1), many.stderr
    for done in (one, many):
        ends = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
        ends = [event for event in ends if event["event"] == "done"]
        assert ends and all(event["error"] == "TimedOut" for event in ends), done.stderr
        assert all(event["duration_ms"] >= 300 for event in ends), done.stderr


def test_a_dead_broker_is_exit_5_naming_the_url(toolctl: Toolctl, project: Project) -> None:
    url = f"pulsar://127.0.0.1:{free_port()}"
    code, _, err = run(toolctl, project, "hello", "--pulsar-url", url)
    assert code == 5
    assert f"cannot reach the Pulsar broker at {url}" in err
    assert "toolctl broker start" in err
    assert "Traceback" not in err
    # a token in its query is refused (nothing would use it), and masked
    code, _, err = run(toolctl, project, "hello", "--pulsar-url", f"{url}?token=s3cr3tpw")
    assert code == 2 and "s3cr3tpw" not in err
    assert f"bad Pulsar URL '{url}?token=***': a Pulsar URL takes no query" in err


@pytest.mark.parametrize(
    "url",
    ["pulsar://[::1", "http://[::1", "ftp://h:1", "pulsar://127.0.0.1:99999", "pulsar://h:abc"],
)
def test_a_malformed_pulsar_url_is_exit_2_in_one_line(
    toolctl: Toolctl, project: Project, url: str
) -> None:
    """--pulsar-url, TOOLCTL_PULSAR_URL and --announced alike (an unclosed IPv6 bracket
    was exit 70): one line, exit 2, for a run and a registry read (which warned and went
    on with exit 0, unlike every other setting given wrong)."""
    code, _, err = run(toolctl, project, "hello", "--pulsar-url", url)
    assert (code, err.splitlines()) == (2, [
        f"toolctl: error: bad Pulsar URL '{url}': expected pulsar://HOST:PORT"
    ])  # fmt: skip
    listed = toolctl("list", "-r", str(project.registry), "--announced", url)
    assert (listed.returncode, listed.stderr.splitlines()) == (2, [
        f"toolctl: error: bad Pulsar URL '{url}': expected pulsar://HOST:PORT"
    ])  # fmt: skip


@pytest.mark.parametrize("form", ["http", "pulsar"])
def test_a_pulsar_url_the_client_cannot_read_is_exit_2_with_its_password_hidden(
    toolctl: Toolctl, project: Project, pulsar_url: str, form: str
) -> None:
    """A user and password in a Pulsar URL (which the client cannot read as a host) was exit
    70 with the password in the message and the crash report: one line, exit 2, the
    password as ***. Both name a live broker, so the TCP probe
    passes and the client itself refuses it; a broker that cannot be reached is told
    without the password too, in `run --json`'s result as on stderr."""
    url = pulsar_url.replace("pulsar://", f"{form}://u:hunter2@")
    masked = url.replace("hunter2", "***")
    done = toolctl("run", "hello", "-r", str(project.registry), "--pulsar-url", url)
    assert (done.returncode, done.stderr) == (
        2,
        f"toolctl: error: bad Pulsar URL '{masked}': expected pulsar://HOST:PORT\n",
    )
    listed = toolctl("list", "-r", str(project.registry), "--announced", url)
    assert (listed.returncode, listed.stderr) == (
        2,
        f"toolctl: error: bad Pulsar URL '{masked}': expected pulsar://HOST:PORT\n",
    )
    assert "hunter2" not in done.stdout + listed.stdout
    # a broker that cannot be reached: the same answer (it was exit 5, the URL's fault told
    # only when a broker answered)
    dead = url.replace(pulsar_url.rsplit(":", 1)[1], str(free_port()))
    gone = toolctl("run", "hello", "-r", str(project.registry), "--pulsar-url", dead, "--json")
    assert gone.returncode == 2 and "hunter2" not in gone.stdout + gone.stderr
    assert "u:***@" in json.loads(gone.stdout)["error"]


def test_a_pulsar_url_with_a_token_is_refused_before_anything_carries_it(
    toolctl: Toolctl, project: Project, pulsar_url: str
) -> None:
    """`?token=` in a Pulsar URL was never used (toolctl sends Pulsar no credentials), and
    a detached worker took it raw onto its command line (`ps`), its process record and its
    log: exit 2, nothing started, the token never shown."""
    url = f"{pulsar_url}?token=ENVSECRET"
    for line in (["run", "hello"], ["worker", "hello", "--detach"]):
        done = toolctl(*line, "-r", str(project.registry), env={"TOOLCTL_PULSAR_URL": url})
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert "a Pulsar URL takes no query or fragment" in done.stderr
        assert "ENVSECRET" not in done.stderr
    state = Path(os.environ["XDG_STATE_HOME"]) / "toolctl"
    kept = [p.read_bytes() for p in state.rglob("*") if p.is_file()]
    assert not any(b"ENVSECRET" in data for data in kept)
    assert toolctl("service", "status", "--json").stdout.strip() == "[]"


@pytest.fixture
def silent_peer() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield server.getsockname()[1]


def test_a_peer_that_never_answers_is_exit_5_within_the_timeout(
    toolctl: Toolctl, project: Project, silent_peer: int
) -> None:
    url = f"pulsar://127.0.0.1:{silent_peer}"
    code, _, err = run(toolctl, project, "hello", "--pulsar-url", url, "--timeout", "1")
    assert code == 5
    assert url in err


def test_the_environment_variable_picks_the_broker(
    toolctl: Toolctl, project: Project, workers: StartWorker
) -> None:
    workers("hello")
    dead = f"pulsar://127.0.0.1:{free_port()}"
    done = toolctl(
        "run", "hello", "--registry", str(project.registry), env={"TOOLCTL_PULSAR_URL": dead}
    )
    assert done.returncode == 5
    assert dead in done.stderr


def test_dry_run_shows_queues_user_and_config(toolctl: Toolctl, project: Project) -> None:
    code, out, _ = run(toolctl, project, "hello", "--arg", "name=x", "--user", "u", "--dry-run")
    assert code == 0
    code, out, _ = run(
        toolctl, project, "hello", "--arg", "name=x", "--user", "u", "--dry-run", "--json"
    )
    plan = json.loads(out)
    assert plan["request_queue"] == project.request_queue("hello")
    assert plan["response_queue"] == project.response_queue("hello")
    assert (plan["user"], plan["config"], plan["arguments"]) == (
        "u",
        {"style": "plain"},
        {"name": "x"},
    )
    assert plan["url"].startswith("pulsar://127.0.0.1:")


def test_batch_keeps_input_order_with_calls_in_flight(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    workers("hello", "--concurrency", "4")
    lines = [json.dumps({"name": f"n{i}"}) for i in range(40)]
    lines.insert(7, '"not an object"')
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    code, out, _ = run(toolctl, project, "hello", "--batch", str(batch), "--concurrency", "8")
    assert code == 1  # one line was not arguments
    results = [json.loads(line) for line in out.splitlines()]
    assert len(results) == 41
    assert results[7]["success"] is False
    assert "line 8" in results[7]["error"]
    outputs = [r["output"] for i, r in enumerate(results) if i != 7]
    assert outputs == [f"hello n{i} from {_login()}" for i in range(40)]


def test_submitted_calls_time_out_too(project: Project, pulsar_url: str) -> None:
    runner, call = _library(project, pulsar_url, "nobody")
    try:
        future = runner.submit(call._replace(timeout=0.3))
        with pytest.raises(TimedOut, match="no answer from service 'nobody'"):
            future.result(timeout=10)
    finally:
        runner.close()


def test_one_runner_serves_many_threads(
    project: Project, workers: StartWorker, pulsar_url: str
) -> None:
    workers("hello", "--concurrency", "4")
    runner, call = _library(project, pulsar_url, "hello")
    outputs: dict[int, str] = {}

    def one(n: int) -> None:
        outputs[n] = runner.run(call._replace(arguments={"name": str(n)}, user="t")).output

    threads = [threading.Thread(target=one, args=(n,)) for n in range(16)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        runner.close()
    assert outputs == {n: f"hello {n} from t" for n in range(16)}


def _library(project: Project, url: str, tool: str) -> tuple[PulsarRunner, Call]:
    settings = Settings.load([project.registry], pulsar_url=url)
    spec = resolve_tool(Registry.open(settings), tool)
    return PulsarRunner(settings), Call(spec, {}, 10.0, "lib")


def _login() -> str:
    return Settings.load().user


def test_a_stopped_batch_loses_no_result_and_records_its_calls_as_stopped(
    project: Project, workers: StartWorker, tmp_path: Path, pulsar_url: str
) -> None:
    """The pipelined path as the threaded one (tests/runners/test_lifetimes.py): SIGTERM
    under a batch whose lines 3 and 5 never get an answer keeps the others' results, in
    order, and tells and records the two as terminated, not as failures of the tool."""
    workers("whoami", "--concurrency", "8")
    naps = [0, 0, 1000, 0, 1000]
    lines = tmp_path / "calls.jsonl"
    lines.write_text("".join(json.dumps({"seconds": n}) + "\n" for n in naps))
    command = [sys.executable, "-m", "toolctl", "run", "whoami", "--batch", str(lines)]
    command += ["--concurrency", "8", "--pulsar-url", pulsar_url]
    command += ["--registry", str(project.registry)]
    with open(tmp_path / "batch.out", "wb") as out:
        batch = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, text=True)
    try:
        first_line(batch, tmp_path)
        time.sleep(1)  # line 4 has its answer too, waiting behind line 3
        batch.send_signal(signal.SIGTERM)
        _, err = batch.communicate(timeout=30)
    finally:
        batch.kill()
    assert batch.returncode == 143, err
    assert err == "toolctl: error: terminated; the batch's calls were stopped\n"
    results = [json.loads(line) for line in (tmp_path / "batch.out").read_text().splitlines()]
    assert [r["success"] for r in results] == [True, True, False, True, False]
    assert [(r["error"], r["exit_code"], r["error_code"]) for r in results[2::2]] == [
        (f"line {n}: terminated; the call was stopped", 143, "terminated") for n in (3, 5)
    ]
    calls = json.loads(
        subprocess.run(
            [sys.executable, "-m", "toolctl", "history", "--caller", "batch", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["calls"]
    assert sorted((c["outcome"], c["exit_code"]) for c in calls) == sorted(
        [("ok", 0)] * 3 + [("interrupted", 143)] * 2
    )


def test_a_broker_s_hint_fits_where_it_is_and_what_it_said() -> None:
    """`toolctl broker start` was the advice for any broker that could not be reached, one
    on another host too (which it would not start)."""
    from toolctl.pulsar.client import BROKER_HINT, REMOTE_HINT, broker_hint

    assert broker_hint("pulsar://localhost:6650") == BROKER_HINT
    assert broker_hint("pulsar://127.0.0.1:6650,127.0.0.2:6650") == BROKER_HINT
    assert broker_hint("pulsar://broker.internal:6650") == REMOTE_HINT
    assert broker_hint("pulsar+ssl://10.0.0.5:6651") == REMOTE_HINT


def test_a_topic_in_a_namespace_the_broker_lacks_says_to_create_it(
    toolctl: Toolctl, tmp_path: Path
) -> None:
    """A missing tenant or namespace was "failed: TopicNotFound", with no way out."""
    from tests.pulsar.pulsar_support import apache_pulsar_url

    url = apache_pulsar_url()
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "s.toml").write_text(
        '[[service]]\nname = "nowhere"\n[service.pulsar]\n'
        'request_queue = "non-persistent://nosuch/request/x"\n'
        'response_queue = "non-persistent://nosuch/response/x"\n'
        '[[tool]]\nname = "nowhere"\nservice = "nowhere"\n'
    )
    done = toolctl("run", "nowhere", "-r", str(reg), "--pulsar-url", url, "--timeout", "10")
    assert done.returncode == 5, done.stderr
    assert "TopicNotFound" in done.stderr and "pulsar-admin namespaces create" in done.stderr


def test_an_answer_with_half_an_emoji_is_printed_not_crashed_on(
    toolctl: Toolctl, project: Project, workers: StartWorker, tmp_path: Path
) -> None:
    """JSON may carry a lone surrogate (a service that cut a string inside an emoji):
    `run` died writing it (exit 70) in plain, --json and --batch, and the batch lost every
    line. It is printed escaped."""
    from tests.conftest import write_files
    from tests.pulsar.pulsar_support import handler_services

    write_files(project.root, {"halves.py": (
        "import json\n\ndef half(config, arguments, user):\n"
        "    return json.loads('\"smile \\\\ud83d\"')\n"
    )})  # fmt: skip
    write_files(project.registry, {"halves.toml": handler_services(project, "halves", ["half"])})
    workers("half")
    plain = toolctl("run", "half", "--registry", str(project.registry))
    assert (plain.returncode, plain.stdout) == (0, "smile \\ud83d\n"), plain.stderr
    as_json = toolctl("run", "half", "--json", "--registry", str(project.registry))
    assert result_of(as_json.stdout)["output"] == "smile \\ud83d"
    batch = toolctl(
        "run", "half", "--batch", "-", "--registry", str(project.registry), input="{}\n{}\n"
    )
    assert batch.returncode == 0, batch.stderr
    assert len(batch.stdout.splitlines()) == 2
