"""Parsing many files for the index: a process pool gives what one process gives."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from toolctl.registry.index import Registry
from toolctl.registry.index.parsing import light, parse_for_index, parse_many
from toolctl.registry.loader import parse_file
from toolctl.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted(str(p) for p in (ROOT / "tests/corpus").glob("*.toml"))
PLUGINS = sorted(str(p) for p in (ROOT / "registry").rglob("*.toml"))


def test_a_pool_parses_the_hostile_corpus_as_one_process_does() -> None:
    paths = CORPUS + PLUGINS + ["/nonexistent/gone.toml"]
    assert parse_many(paths, workers=2) == parse_many(paths, workers=1)


def test_what_the_index_keeps_is_the_whole_descriptor() -> None:
    for path in CORPUS + PLUGINS:
        whole, kept = parse_file(path), parse_for_index(path)
        assert kept.problems == whole.problems
        assert [json.loads(t) for t in kept.texts] == [d.data for d in whole.definitions]
        assert kept.definitions == [
            d._replace(data=light(d.kind, d.data)) for d in whole.definitions
        ]


def test_a_rebuild_after_an_edit_equals_a_cold_build(tmp_path: Path) -> None:
    """The edit path reuses stored rows (lightly decoded): same index as from scratch."""
    root = tmp_path / "reg"
    root.mkdir()
    (root / "s.toml").write_text(
        '[[service]]\nname = "svc"\n[service.http]\nurl = "http://127.0.0.1:9"\n'
    )
    for n in range(30):
        (root / f"t{n:02d}.toml").write_text(
            f'[[tool]]\nname = "t{n}"\nservice = "svc"\n[tool.http]\npath = "/x"\n\n'
            f'[[tool]]\nname = "plain-{n}"\n[tool.local]\ncommand = ["true"]\n'
        )
    past = time.time() - 60
    for path in [root, *root.iterdir()]:
        os.utime(path, (past, past))
    settings = Settings.load([root])
    Registry.open(settings, full=True)
    (root / "s.toml").write_text(
        '[[service]]\nname = "svc"\n[service.pulsar]\n'
        'request_queue = "request:tg:x"\nresponse_queue = "response:tg:x"\n'
    )
    (root / "t03.toml").write_text('[[tool]]\nname = "plain-4"\n[tool.local]\ncommand = ["x"]\n')
    for path in (root / "s.toml", root / "t03.toml"):
        os.utime(path, (past + 1, past + 1))
    edited = Registry.open(settings, full=True)
    elsewhere = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cold")}
    cold = Registry.open(Settings.load([root], environ=elsewhere), full=True)
    assert cold.settings.cache_dir != settings.cache_dir
    for kind in ("tool", "service"):
        assert edited.winners(kind) == cold.winners(kind)
    assert edited.findings() == cold.findings()
    messages = [r.message for r in edited.findings()]
    assert "tool 't5' has [tool.http] but service 'svc' is pulsar" in messages
    assert any("'plain-4' is shadowed by" in m for m in messages)
