"""How the commands show what their use case returned: definitions, findings, a
recommendation, background processes. (``render`` has the general parts: JSON, tables,
notes and errors.)"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import typer

from toolctl.terminal import diagrams, render

if TYPE_CHECKING:
    from pathlib import Path

    from toolctl.findings import Finding
    from toolctl.graph import Recommendation
    from toolctl.interchange.flows import ImportDone
    from toolctl.learning.evaluate import Evaluation
    from toolctl.learning.usecases import Learned, NextTools
    from toolctl.processes.stopping import Stopped
    from toolctl.registry.check import CheckResult
    from toolctl.registry.loader import Definition
    from toolctl.registry.locations import Locations
    from toolctl.registry.query import Shown
    from toolctl.registry.trust import Trusted
    from toolctl.registry.writer import Unregistered, Written
    from toolctl.reporting import Reporter


_SHOWN_MASKED = frozenset({"url", "env", "headers", "command", "start"})
"""The keys of a runtime section that `render.masked` may change."""


def definition_rows(found: Iterable[Definition]) -> Iterator[dict[str, Any]]:
    """``{"kind": kind, **data, "file": relpath, "line": line}``, made in the decoded data
    itself rather than in a copy of each row (`list --json`)."""
    paths: dict[str, str] = {}  # ten tools to a file: one relpath per file
    for d in found:
        row = d.data
        for section, runtime in row.items():  # URLs and secrets written out, as `show` masks
            if isinstance(runtime, dict) and _SHOWN_MASKED.intersection(runtime):
                row[section] = render.masked(runtime)
        row.setdefault("kind", d.kind)
        row["file"] = paths.get(d.file) or paths.setdefault(d.file, render.display_path(d.file))
        row["line"] = d.line
        yield row


def print_definition(shown: Shown, *, as_json: bool) -> None:
    """`show`: the definition in force, where it lives and what it shadows."""
    winner, shadowed, holder = shown.winner, shown.shadowed, shown.quarantined_by
    if as_json:
        render.print_json(
            {
                "kind": winner.kind,
                "name": winner.name,
                "descriptor": render.masked(winner.data),
                "file": render.display_path(winner.file),
                "line": winner.line,
                "shadowed": [
                    {"file": render.display_path(d.file), "line": d.line} for d in shadowed
                ],
                **({"origin": shown.origin} if shown.origin else {}),
                "quarantined": None
                if holder is None
                else {
                    "confusable_with": holder.name,
                    "file": render.display_path(holder.file),
                    "line": holder.line,
                },
            }
        )
        return
    where = shown.origin or f"{render.display_path(winner.file)}:{winner.line}"
    if holder is not None:
        where += "; QUARANTINED"
    if winner.kind == "group":
        fields = group_fields(winner.data, shown.ordered)
    else:
        fields = render.flatten(
            render.masked({k: v for k, v in winner.data.items() if k not in ("schema", "name")})
        )
    if winner.data.get("title"):  # the name in the system it came from, first
        fields = [("title", winner.data["title"]), *(f for f in fields if f[0] != "title")]
    fields += [("shadows", f"{render.display_path(d.file)}:{d.line}") for d in shadowed]
    if holder is not None:
        fields = [
            (
                "quarantined",
                f"confusable with '{holder.name}' "
                f"({render.display_path(holder.file)}:{holder.line}): never run, listed or "
                "exported; rename one of them, or remove this one (toolctl unregister "
                f"{winner.kind} {winner.name})",
            ),
            *fields,
        ]
    render.print_fields(f"{winner.kind} {winner.name}  ({where})", fields)


def group_fields(data: dict[str, Any], ordered: Sequence[str]) -> list[tuple[str, str]]:
    """`show GROUP`: the tools numbered in usage order (the rest unnumbered), then the example."""
    steps = len([t for t in data.get("usage_order") or [] if t in ordered])
    fields = [(key, str(data[key])) for key in ("name", "description", "category") if data.get(key)]
    for position, tool in enumerate(ordered, start=1):
        fields.append(
            (
                "tools" if position == 1 else "",
                f"{position}. {tool}" if position <= steps else f"-  {tool}",
            )
        )
    if data.get("usage_example"):
        fields.append(("usage_example", str(data["usage_example"])))
    return fields


def print_findings(result: CheckResult, format: str) -> None:
    """`check`: JSON, SARIF, GitHub workflow annotations, or ``file:line: severity: message``."""
    if format == "json":
        render.print_json(result.to_json(render.display_path, render.relativise))
        return
    if format == "sarif":
        render.print_json(result.to_sarif())
        render.note(result.summary())
        return
    for finding in result.findings:
        where = render.display_path(finding.file)
        # a diagnostic line like any other: capped, control characters visible escapes (an
        # ESC or BEL a published name carries must not retitle a CI log or a terminal)
        message = render.bounded(render.relativise(finding.message))
        if format == "github":
            where, message = _escape(render.bounded(where), True), _escape(message, False)
            typer.echo(f"::{finding.severity} file={where},line={finding.line}::{message}")
        else:
            typer.echo(render.one_line(f"{where}:{finding.line}: {finding.severity}: {message}"))
    for note in result.notes:
        render.note(note)
    render.note(result.summary())


def _escape(text: str, is_property: bool) -> str:
    """GitHub workflow-command escaping (``%``, CR and LF; also ``:`` and ``,`` in properties)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if is_property else text


def print_imported(done: ImportDone, *, as_json: bool) -> None:
    """What an import did (JSON, or its lines in order), then the refusal it ended with."""
    if as_json:
        render.print_json(done.document(render.display_path))
    else:
        render.replay(done.lines)
    if done.error is not None:
        raise done.error


def print_registered(written: Sequence[Written], *, as_json: bool) -> None:
    if as_json:
        render.print_json([{**w.to_json(), "file": render.display_path(w.path)} for w in written])
        return
    for w in written:
        render.note(w.describe())


def print_unregistered(done: Unregistered, *, as_json: bool) -> None:
    """What `unregister` removed (with a service's tools), and the shadowed definition now
    in force, if any."""
    removed, now = done.removed, done.now
    file = render.display_path(removed.file)
    if as_json:
        in_force = (
            None if now is None else {"file": render.display_path(now.file), "line": now.line}
        )
        tools = [{"name": t.name, "file": render.display_path(t.file)} for t in done.tools]
        render.print_json(
            {"kind": removed.kind, "name": removed.name, "file": file, "in_force": in_force,
             "tools": tools}
        )  # fmt: skip
        return
    render.note(f"unregistered {removed.kind} '{removed.name}' ({file})")
    for tool in done.tools:
        render.note(f"unregistered tool '{tool.name}' ({render.display_path(tool.file)})")
    if now is not None:
        render.warn(
            f"the shadowed definition in {render.display_path(now.file)}:{now.line} is now in force"
        )


def print_recommendation(result: Recommendation, threshold: float, *, color: bool) -> None:
    """`recommend` as tables: the actions by hops, then the tools their Call edges name."""
    by_hops = sorted(result.actions, key=lambda a: (a.hops, a.name))
    rows = [
        [a.name, str(a.hops), " -> ".join(a.path), a.description.partition("\n")[0]]
        for a in by_hops
    ]
    render.print_table(["ACTION", "HOPS", "PATH", "DESCRIPTION"], rows, color=color)
    if not result.tools:
        render.note(f"no Call edge scores {diagrams.score_text(threshold)} or more")
        return
    rows = [
        [t.name, ", ".join(t.called_by), diagrams.score_text(t.score), t.runtime or "?"]
        for t in result.tools
    ]
    typer.echo("")
    render.print_table(["TOOL", "CALLED BY", "SCORE", "RUNTIME"], rows, color=color)


def report_stop(stopped: Stopped, done: str, absent: str | None) -> None:
    """Say on stderr what a stop (``processes.Stopped``) did: stopped (pid), found a stale
    record, or nothing ran."""
    record = stopped.record
    if record is not None and stopped.stale:
        render.warn(
            f"dropped the stale record of {record.kind} '{record.name}': pid {record.pid} "
            "now belongs to another process; nothing was stopped"
        )
    elif record is not None and stopped.stopped:
        render.note(f"{done} (pid {record.pid})")
        if stopped.survivors:
            pids = ", ".join(str(pid) for pid in stopped.survivors)
            render.warn(f"{record.kind} '{record.name}': still running after SIGKILL: {pids}")
    elif absent is not None:
        render.note(absent)


def print_stops(outcomes: Sequence[Stopped], name: str | None, *, as_json: bool) -> None:
    """`service down [NAME | --all]`: the stops as JSON, or said on stderr."""
    if as_json:
        render.print_json([stop_json(each) for each in outcomes])
    else:
        report_stops(outcomes, name)


def report_stops(outcomes: Sequence[Stopped], name: str | None) -> None:
    """`service down [NAME | --all]`: each stop (``processes.Stopped``), or that nothing ran."""
    absent = None if name is None else f"'{name}' was not running"  # a service, the broker...
    for each in outcomes:
        kind = each.record.kind if each.record is not None else "process"
        report_stop(each, f"stopped {kind} '{each.name}'", absent)
    if name is None and not any(each.stopped or each.stale for each in outcomes):
        render.note("nothing was running")


def print_stop(stopped: Stopped, done: str, absent: str, *, as_json: bool) -> None:
    """`broker stop`, `worker --stop`: the stop as JSON, or said on stderr."""
    if as_json:
        render.print_json(stop_json(stopped))
    else:
        report_stop(stopped, done, absent)


def started_json(record: Any, started: bool) -> dict[str, Any]:
    """A background process `--detach` left running: its record, as `service status`
    shows it (``started``: when it started, a Unix time), and ``already_running``: it
    ran before this call. (``started`` was that flag here, a Unix time there.)"""
    return {**process_json(record), "already_running": not started}


def print_started(what: str, record: Any, started: bool, *, as_json: bool) -> None:
    """`serve --detach`, `service up`: said on stderr; its URL on stdout, or its record
    as `started_json`."""
    how = "started" if started else "already running"
    render.note(f"{what} {how} at {record.url} (pid {record.pid}, log {record.log})")
    if as_json:
        render.print_json(started_json(record, started))
    else:
        typer.echo(record.url)


def empty_listing(kind: str, filtered: bool) -> str:
    """What an empty `list KIND` says instead of a lone header."""
    plural = kind if kind.endswith("s") else f"{kind}s"
    if filtered:
        return f"no {plural} match the filters"
    hint = "; `toolctl new tool NAME` writes one" if plural == "tools" else ""
    return f"no {plural} in force{hint}"


def stop_json(stopped: Stopped) -> dict[str, Any]:
    """A stop (``processes.Stopped``) as `service down --json` and `broker stop --json` show
    it: what was stopped, or why nothing was."""
    record = stopped.record
    state = "stale" if stopped.stale else "stopped" if stopped.stopped else "not running"
    return {
        "kind": record.kind if record is not None else None,
        "name": stopped.name,
        "pid": record.pid if record is not None else None,
        "state": state,
        "survivors": list(stopped.survivors),
    }


def print_broker_status(status: dict[str, Any], *, as_json: bool) -> None:
    """`broker status`: running or not, its URL, pid, data directory and log."""
    if as_json:
        render.print_json(status)
    elif not status["running"]:
        typer.echo("broker: not running")
    else:
        state = "running" if status["answering"] else "running, not answering"
        fields = [("state", state), ("url", str(status["url"])), ("pid", str(status["pid"]))]
        render.print_fields(
            "broker", [*fields, ("data", str(status["data"])), ("log", status["log"])]
        )


def process_json(record: Any) -> dict[str, Any]:
    """A background process (``processes.ProcessRecord``) as `service status --json` shows it."""
    shown = {k: v for k, v in record.to_json().items() if k not in ("start_time", "boot_id")}
    shown = render.masked(shown)  # its argv as `show` shows the command (`--api-key ***`)
    return {**shown, "uptime_s": round(time.time() - record.started, 1)}


PROCESS_COLUMNS = ["KIND", "NAME", "PID", "URL", "UPTIME", "LOG"]


def print_processes(records: Sequence[Any], *, as_json: bool, color: bool) -> None:
    """`service status`: what runs in the background, as JSON or a table."""
    if as_json:
        render.print_json([process_json(r) for r in records])
        return
    rows = [process_row(r) for r in records]
    empty = "nothing toolctl started runs in the background"
    render.print_table(PROCESS_COLUMNS, rows, color=color, empty=empty)


def process_row(record: Any) -> list[str]:
    where = record.url or (f"port {record.port}" if record.port else "")
    return [
        record.kind,
        record.name,
        str(record.pid),
        where,
        _uptime(time.time() - record.started),
        render.display_path(record.log),
    ]


def _uptime(seconds: float) -> str:
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def print_locations(found: Locations, *, as_json: bool = False) -> None:
    """`where`: the project, the search path in order, where register writes, the config."""
    if as_json:
        render.print_json(found.to_json())
        return
    lines = [f"project: {found.project or '(none: outside a project)'}"]
    if found.ignored_project is not None:
        lines.append(f"  ignored: {found.ignored_project} (another user owns it)")
    lines.append("search path (first wins):")
    for number, directory in enumerate(found.search_path, start=1):
        refused = directory.refused
        if refused is not None:
            missing = f", {refused}: commands refuse it"
        else:
            missing = "" if directory.exists else ", not created yet"
        lines.append(f"  {number}. {directory.path}  ({directory.source}{missing})")
    writes_to = found.writes_to
    if writes_to is None and any(d.refused for d in found.search_path):
        lines.append("register writes to: (nowhere: a directory above is refused)")
    else:
        lines.append(f"register writes to: {writes_to or '(no writable directory)'}")
    lines.append("config files:")
    lines += [f"  {file}" for file in found.config_files] or ["  (none)"]
    if found.user_config not in found.config_files:
        lines.append(f"  ({found.user_config} would hold your defaults)")
    shown = {k: f"{v:g} s" if isinstance(v, float) else v for k, v in found.defaults.items()}
    lines += [f"{key}: {value}" for key, value in shown.items() if value is not None]
    lines += [f"data: {found.data_dir}", f"cache: {found.cache_dir}", f"state: {found.state_dir}"]
    typer.echo("\n".join(lines))


def print_drawing(drawing: str | bytes) -> None:
    """A drawing on standard output: DOT or Mermaid text, or SVG or PNG bytes."""
    if isinstance(drawing, str):
        render.write_stdout(drawing)
        return
    import sys

    if drawing.startswith(b"\x89PNG") and sys.stdout.isatty():  # as curl and gh refuse to
        from toolctl.errors import UsageError

        raise UsageError(
            "--format png is binary and standard output is a terminal",
            hint="redirect it to a file: toolctl graph --format png > graph.png",
        )
    sys.stdout.buffer.write(drawing)
    sys.stdout.flush()


def print_graph(drawn: Any, format: str) -> None:
    """A drawn toolkit or recommendation (``to_json`` and ``drawing``) as json, dot or
    mermaid (a recommendation's table is ``print_recommendation``)."""
    if format == "json":
        render.print_json(drawn.to_json())
        return
    drawing = drawn.drawing() if callable(drawn.drawing) else drawn.drawing
    draw = diagrams.draw_mermaid if format == "mermaid" else diagrams.draw_dot
    render.write_stdout(draw(drawing))


def print_next(result: NextTools, *, as_json: bool, color: bool) -> None:
    """`recommend --after`: the next tools ranked, as a table or JSON; a warning for each
    --after name not in force, a note when no learned file helped."""
    for name in result.unknown:
        render.warn(f"tool '{name}' is not in force; used as context only")
    if result.learned is None:
        render.note(
            "no learned file on the search path (`toolctl graph learn`): graph and query only"
        )
    if as_json:
        return render.print_json(result.to_json())
    rows = [[str(i), s.name, f"{s.score:.4f}"] for i, s in enumerate(result.ranked, 1)]
    render.print_table(["RANK", "TOOL", "SCORE"], rows, color=color)


def print_exported(exported: Any) -> None:
    """What `export` made (``interchange.flows``): a JSON list streamed as it is made, a
    JSON document or lines of text; its notes as warnings, after a stream's items."""
    from toolctl.interchange.flows import Streamed

    if isinstance(exported, Streamed):  # its notes are complete once its items are out
        render.print_json_list(exported.items, exported.key)
    for note in exported.notes:
        render.warn(note)
    if isinstance(exported, Streamed):
        return
    if isinstance(exported.data, str):
        render.write_stdout(exported.data)
    else:
        render.print_json(exported.data)


def print_installed(done: Any, *, printed: bool, as_json: bool = False) -> None:
    """What `mcp install` did (``interchange.client_install``), or with ``printed`` the
    entry it would write and where."""
    where = render.display_path(done.path)
    verb = "unchanged" if done.unchanged else "replaced" if done.replaced else "added"
    if as_json:
        backup = render.display_path(done.backup) if done.backup is not None else None
        shown = {"client": done.client.name, "file": where, "name": done.name}
        action = "printed" if printed else verb
        render.print_json({**shown, "entry": done.entry, "action": action, "backup": backup})
        return
    if printed:
        render.print_json({done.client.keys[-1]: {done.name: done.entry}})
        render.note(f"{done.client.title} reads it from {where}")
        return
    verb = "unchanged:" if done.unchanged else verb
    render.note(f"{verb} server '{done.name}' in {where} ({done.client.title})")
    if done.backup is not None:
        render.note(f"the previous file is kept as {render.display_path(done.backup)}")
    if done.shared:
        render.note(
            "the entry runs `toolctl mcp serve` from PATH in the project, so it serves "
            "everyone who clones it: toolctl must be installed and on their PATH"
        )


def print_learned(done: Learned, *, as_json: bool) -> None:
    """`graph learn`: what was learned from how many sessions, and where it was written."""
    summary = done.summary()
    if done.skipped:
        render.warn(
            f"left out {done.skipped} call(s) whose tool name cannot be learned (empty, '^', "
            "with a space, or not text)"
        )
    if done.text is not None:
        sys.stdout.write(done.text)
    if as_json:
        render.print_json({**summary, "path": render.display_path(done.path)})
        return
    where = "stdout" if str(done.path) == "-" else render.display_path(done.path)
    render.note(
        f"learned {summary['sessions']} sessions, {summary['calls']} calls: "
        f"{summary['contexts']} contexts, {summary['proposals']} proposed edge scores "
        f"-> {where}"
    )


def print_evaluation(result: Evaluation, *, as_json: bool) -> None:
    """`graph evaluate`: recall@K of each model (K of 1, 3 and --top) and the mean list size,
    then a note of what was measured."""
    if as_json:
        return render.print_json(result.to_json())
    top = result.top
    ks = sorted({k for k in (1, 3, top) if k <= top})
    header = ["MODEL", *(f"RECALL@{k}" for k in ks), "LIST SIZE"]
    rows = [
        [s.model, *(f"{s.recall(k):.3f}" for k in ks), f"{s.list_size:.2f}"] for s in result.scores
    ]
    render.print_table(header, rows, color=False)
    render.note(
        f"{result.scores[0].calls} calls in {result.conversations} conversations, "
        f"{result.folds} folds; lexical weight per fold: {list(result.weights)}"
    )


def print_trusted(
    entries: Sequence[Trusted],
    problems: Sequence[Finding],
    reporter: Reporter,
    *,
    as_json: bool,
    color: bool,
) -> None:
    """`trust list`: the entries in force, as JSON or a table; each invalid one warned of."""
    for problem in problems:
        reporter.warn(f"{render.display_path(problem.file)}:{problem.line}: {problem.message}")
    shown = [
        {"key": e.key, "services": e.services, "file": render.display_path(e.file), "line": e.line}
        for e in entries
    ]
    if as_json:
        render.print_json(shown)
        return
    rows = [[str(e["key"]), str(e["services"]), f"{e['file']}:{e['line']}"] for e in shown]
    empty = "no key is trusted; `toolctl trust add KEY --services PATTERN` trusts one"
    render.print_table(["KEY", "SERVICES", "FILE"], rows, color=color, empty=empty)


def print_untrusted(key: str, removed: Sequence[tuple[Path, str]], *, as_json: bool) -> None:
    """`trust remove`: what was removed, from which file."""
    document = [
        {"key": key, "services": services, "file": render.display_path(file)}
        for file, services in removed
    ]
    if as_json:
        render.print_json(document)
        return
    for each in document:
        render.note(f"no longer trusted: {key} for services {each['services']!r} ({each['file']})")
