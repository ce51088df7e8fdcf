"""Next-tool recommendations learned from use, measured on BFCL multi-turn (issue #26).

1. Gets the data: ``bfcl-eval`` (pinned) into a venv of its own under
   ``${XDG_CACHE_HOME:-~/.cache}/toolctl/bench/`` (once), with ``--no-deps`` plus
   ``mpmath``: the data files and the eight multi-turn backend classes need nothing else,
   and the package's full dependencies (torch, vllm, the LLM SDKs) are gigabytes.
2. Converts its 200 multi-turn base conversations into OpenAI chat transcripts
   (``bench/bfcl_transcripts.py``, run in that venv): user turns as the query, the 1,142
   ground-truth calls as ``tool_calls`` executed on BFCL's backends for their results, the
   ~28 functions in play as ``tools``.
3. Evaluates, 5-fold cross-validated, in one run: the learned blend, transition-only
   (first order, popularity backoff) and popularity-only; recall@1/3/5 and list sizes.
   Target: recall@5 >= 0.90 with lists of at most 5 tools.
4. Times ``learn`` on 100,000 call records (target < 2 s), two ways: the BFCL sessions
   repeated (5% of calls marked failed, seeded), and sessions over 1,000 tools with
   Zipf-distributed choices (many distinct contexts); with the learned file's writing.

Usage::

    python bench/learn_bfcl.py [--repeat 5] [--transcripts FILE]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
import venv
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolctl.learning.evaluate import evaluate  # noqa: E402
from toolctl.learning.learned_file import dumps  # noqa: E402
from toolctl.learning.model import learn  # noqa: E402
from toolctl.transcripts import Call, Transcript, read_transcripts  # noqa: E402

BFCL = "bfcl-eval==2026.3.23"
MPMATH = "mpmath==1.3.0"  # what BFCL's MathAPI backend imports
RECORDS = 100_000


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolctl" / "bench" / BFCL.replace("==", "-")


def transcripts_file() -> Path:
    """The BFCL transcripts, made once per pinned version."""
    home = cache_dir()
    out = home / "multi_turn_base.jsonl"
    if out.exists():
        return out
    python = home / "venv" / "bin" / "python"
    if not python.exists():
        print(f"installing {BFCL} (data only) into {home / 'venv'} ...")
        venv.create(home / "venv", with_pip=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "--no-deps", BFCL, MPMATH], check=True)
    converter = Path(__file__).with_name("bfcl_transcripts.py")
    text = subprocess.run(
        [str(python), str(converter)], check=True, capture_output=True, text=True
    ).stdout
    temporary = out.with_suffix(".tmp")
    temporary.write_text(text)
    temporary.replace(out)
    return out


def report(transcripts: Sequence[Transcript]) -> None:
    calls = sum(len(t.calls) for t in transcripts)
    offered = statistics.mean(len(t.tools) for t in transcripts)
    print(f"{len(transcripts)} conversations, {calls} calls, {offered:.1f} tools in play each")
    started = time.perf_counter()
    result = evaluate(transcripts, 5, 5)
    elapsed = time.perf_counter() - started
    print(f"5-fold next-call prediction ({elapsed:.1f} s):")
    print(f"  {'model':<11} {'recall@1':>8} {'recall@3':>8} {'recall@5':>8} {'list size':>9}")
    for s in result.scores:
        recalls = " ".join(f"{s.recall(k):8.3f}" for k in (1, 3, 5))
        print(f"  {s.model:<11} {recalls} {s.list_size:9.2f}")
    best = {s.model: s.recall(5) for s in result.scores}
    print(f"  lexical weight chosen inside each training fold: {list(result.weights)}")
    print(
        f"  recall@5 learned/transition: {best['learned'] / best['transition']:.3f}, "
        f"target >= 0.90: {'met' if best['learned'] >= 0.90 else 'NOT met'}"
    )


def repeated(transcripts: Sequence[Transcript], rng: random.Random) -> list[list[Call]]:
    """BFCL's sessions over and over until RECORDS calls, 5% of them failed."""
    sessions: list[list[Call]] = []
    count = 0
    while count < RECORDS:
        for t in transcripts:
            calls = [Call(c.tool, {}, None, "", rng.random() >= 0.05) for c in t.calls]
            sessions.append(calls[: RECORDS - count])
            count += len(sessions[-1])
            if count >= RECORDS:
                break
    return sessions


def zipf(rng: random.Random) -> list[list[Call]]:
    """Sessions of 2..12 calls over 1,000 tools, choices Zipf-distributed, 5% failed."""
    names = [f"tool-{i:04d}" for i in range(1000)]
    weights = [1 / (i + 1) for i in range(1000)]
    sessions, count = [], 0
    while count < RECORDS:
        size = min(rng.randint(2, 12), RECORDS - count)
        picks = rng.choices(names, weights, k=size)
        sessions.append([Call(n, {}, None, "", rng.random() >= 0.05) for n in picks])
        count += size
    return sessions


def timed(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def learn_times(transcripts: Sequence[Transcript], repeat: int) -> None:
    rng = random.Random(26)
    small = [list(t.calls) for t in transcripts]
    per_small = timed(lambda: learn(small), repeat) / sum(map(len, small))
    print(f"learning {RECORDS:,} call records (median of {repeat}; target < 2 s):")
    for label, sessions in (("BFCL repeated", repeated(transcripts, rng)), ("Zipf", zipf(rng))):
        model = learn(sessions)
        learning = timed(lambda s=sessions: learn(s), repeat)  # type: ignore[misc]
        writing = timed(lambda m=model: dumps(m), repeat)  # type: ignore[misc]
        print(
            f"  {label:<13} learn {learning:.3f} s + write {writing:.3f} s = "
            f"{learning + writing:.3f} s; {len(model.contexts):,} contexts; "
            f"per record {learning / RECORDS * 1e6:.2f} us = "
            f"{learning / RECORDS / per_small:.2f}x the per-record cost at "
            f"{sum(map(len, small)):,} records"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--transcripts", type=Path, help="Use this file instead of BFCL's.")
    options = parser.parse_args()
    path = options.transcripts or transcripts_file()
    with path.open(encoding="utf-8") as lines:
        transcripts = list(read_transcripts(lines, str(path)))
    report(transcripts)
    learn_times(transcripts, options.repeat)


if __name__ == "__main__":
    main()
