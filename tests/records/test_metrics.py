"""The Prometheus exposition, checked by Prometheus's own promtool."""

from __future__ import annotations

import urllib.request

from tests.records.promtool import check_metrics
from toolctl.processes import free_port
from toolctl.records.metrics import Metrics, serve_metrics


def test_the_exposition_is_clean_for_promtool() -> None:
    metrics = Metrics()
    for outcome, seconds in (("ok", 0.02), ("ok", 0.3), ("failed", 1.5), ("invalid", 1e-5)):
        metrics.started("word-count", "local")
        metrics.finished("word-count", "local", "serve", outcome, seconds)
    metrics.started("slow", "http")  # still running
    metrics.watch_backlog("persistent://tg/request/joke", lambda: 3)
    exposition = metrics.exposition()
    text = exposition.decode()
    assert (
        'toolctl_tool_calls_total{caller="serve",outcome="ok",runtime="local",tool="word-count"} 2.0'
        in text
    )
    # a call refused before it ran is counted, and has no duration (as in `stats`)
    assert 'caller="serve",outcome="invalid",runtime="local",tool="word-count"} 1.0' in text
    assert 'toolctl_tool_call_duration_seconds_count{runtime="local",tool="word-count"} 3.0' in text
    assert (
        'toolctl_tool_call_duration_seconds_bucket{le="0.5",runtime="local",tool="word-count"} 2.0'
        in text
    )
    assert 'toolctl_tool_calls_in_flight{runtime="http",tool="slow"} 1.0' in text
    assert 'toolctl_worker_queue_backlog{queue="persistent://tg/request/joke"} 3.0' in text
    checked = check_metrics(exposition)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip() == ""


def test_a_worker_serves_its_metrics_over_http() -> None:
    metrics = Metrics()
    metrics.started("t", "local")
    metrics.finished("t", "local", "worker", "ok", 0.01)
    port = free_port()
    server, thread = serve_metrics(metrics, "127.0.0.1", port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            body = answer.read()
            assert answer.headers["Content-Type"].startswith("text/plain")
    finally:
        server.shutdown()
        thread.join(timeout=10)
    assert b'toolctl_tool_calls_total{caller="worker"' in body
    assert check_metrics(body).returncode == 0


def test_promtool_does_find_faults() -> None:
    """The check above can fail: a counter without _total is a lint problem for promtool."""
    bad = b"# HELP requests Requests.\n# TYPE requests counter\nrequests 1\n"
    checked = check_metrics(bad)
    assert checked.returncode != 0 and "_total" in checked.stdout + checked.stderr
