"""Every real configuration in ``../shared/data`` imports, or is refused with its reason.

The files are Chat2Graph's YAMLs and TrustGraph's documented config values (see
``../shared/data/README.md``); they are read where they are, never copied here. CI has
``shared/`` beside the checkout; a worktree one level further down finds it too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolctl.errors import RegistryError, ToolctlError, UsageError
from toolctl.interchange import check_landing, export, read_import
from toolctl.registry.index import Registry
from toolctl.registry.writer import register
from toolctl.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SHARED = next(
    (
        p
        for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data")
        if p.is_dir()
    ),
    ROOT.parent / "shared" / "data",
)
CHAT2GRAPH = sorted((SHARED / "chat2graph").glob("*.yml"))
TRUSTGRAPH = sorted(p for p in (SHARED / "trustgraph").glob("*.json") if p.name != "manifest.json")
needs_data = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"{SHARED} is absent (CI has ../shared beside the checkout)"
)

# The service file each TrustGraph tool example comes with (same document or test).
COMPANION = {"03": "01", "04": "01", "06": "05", "08": "05", "22": "25", "23": "26"}
# Examples TrustGraph itself refuses (its own tests say so), with toolctl's reason.
REFUSED = {
    "20": "has no request-queue and response-queue (nor a topic",
    "23": "misses config param 'collection' that service 'custom-service' requires",
}
LEFT_OUT = {
    "knowledge-query": "runs only inside TrustGraph",
    "text-completion": "runs only inside TrustGraph",
    "prompt": "runs only inside TrustGraph",
    "structured-query": "runs only inside TrustGraph",
    "row-embeddings-query": "runs only inside TrustGraph",
}


def land(format: str, files: list[Path], directory: Path, *, as_loaded: bool = False) -> int:
    """Import ``files`` into ``directory`` the way `toolctl import` does; entries written."""
    settings = Settings.load([directory])
    imported = read_import(format, files, as_loaded=as_loaded)
    check_landing(imported, settings)
    return len(register(imported.entries, settings))


def by_number(number: str) -> Path:
    return next(p for p in TRUSTGRAPH if p.name.startswith(f"{number}-"))


@needs_data
@pytest.mark.parametrize("as_loaded", [False, True])
@pytest.mark.parametrize("path", CHAT2GRAPH, ids=lambda p: p.stem)
def test_every_chat2graph_file_imports(path: Path, as_loaded: bool, tmp_path: Path) -> None:
    assert land("chat2graph", [path], tmp_path / "reg", as_loaded=as_loaded) > 0
    registry = Registry.open(Settings.load([tmp_path / "reg"]), full=True)
    assert [r for r in registry.findings() if r.severity == "error"] == []


@needs_data
@pytest.mark.parametrize("path", TRUSTGRAPH, ids=lambda p: p.stem)
def test_every_trustgraph_example_imports_or_is_refused_with_its_reason(
    path: Path, tmp_path: Path
) -> None:
    number = path.name[:2]
    value = json.loads(path.read_text())
    files = [path]
    if number in COMPANION:
        files = [by_number(COMPANION[number]), path]
    if number in REFUSED:
        with pytest.raises(RegistryError) as caught:
            land("trustgraph", files, tmp_path / "reg")
        assert len(caught.value.details) == 1
        assert REFUSED[number] in caught.value.details[0]
        assert "\n" not in caught.value.details[0]
        assert not (tmp_path / "reg").exists() or not list((tmp_path / "reg").rglob("*.toml"))
    elif value.get("type") == "mcp-tool":
        mcp_tool_lands_on_its_server(path, value, tmp_path / "reg")
    elif "url" in value:  # an MCP server item (mcp/ID): a service with [service.mcp]
        assert land("trustgraph", files, tmp_path / "reg") == 1
        written = "".join(p.read_text() for p in (tmp_path / "reg").rglob("*.toml"))
        assert f'url = "{value["url"]}"' in written
        if value.get("auth-token"):
            assert value["auth-token"] not in written
            assert "Bearer ${env:" in written
    elif value.get("type", "tool-service") == "tool-service":
        assert land("trustgraph", files, tmp_path / "reg") == len(files)
        round_trip(tmp_path)
    else:
        with pytest.raises(UsageError) as refused:
            land("trustgraph", files, tmp_path / "reg")
        message = str(refused.value)
        assert "holds nothing toolctl can import as trustgraph" in message
        assert LEFT_OUT[value.get("type")] in message
        assert refused.value.details == []


def mcp_tool_lands_on_its_server(path: Path, value: dict[str, object], reg: Path) -> None:
    """An mcp-tool names its MCP server item (mcp/ID): refused while that service is
    unknown, imported as a [tool.mcp] on it once it is registered."""
    from toolctl.interchange.slugs import slug

    service = slug(str(value.get("mcp-tool") or value["name"]))
    with pytest.raises(RegistryError) as caught:
        land("trustgraph", [path], reg)
    assert f"names unknown service '{service}'" in caught.value.details[0]
    (reg / "services").mkdir(parents=True, exist_ok=True)
    (reg / "services/mcp.toml").write_text(
        f'[[service]]\nname = "{service}"\n[service.mcp]\nurl = "http://127.0.0.1:9/mcp"\n'
    )
    assert land("trustgraph", [path], reg) == 1
    tool = Registry.open(Settings.load([reg]), full=True).resolve("tool", str(value["name"]))
    assert tool.data["mcp"]["name"] == value.get("mcp-tool", value["name"])
    assert tool.data["runtime"] == "mcp"


def round_trip(tmp_path: Path) -> None:
    """Export what landed, import that into a fresh registry, export again: same bytes."""

    def exported(directory: Path) -> str:
        registry = Registry.open(Settings.load([directory]), full=True)
        tools = {d.name: d.data for d in registry.winners("tool")}
        services = {d.name: d.data for d in registry.winners("service")}
        return json.dumps(export("trustgraph", tools, services).data, indent=2, sort_keys=True)

    first = exported(tmp_path / "reg")
    (tmp_path / "items.json").write_text(first)
    land("trustgraph", [tmp_path / "items.json"], tmp_path / "again")
    assert exported(tmp_path / "again") == first


@needs_data
def test_every_shared_file_is_covered() -> None:
    assert len(CHAT2GRAPH) == 10
    assert len(TRUSTGRAPH) == 44
    for number in [*COMPANION, *COMPANION.values(), *REFUSED]:
        by_number(number)


@needs_data
def test_the_queue_form_trustgraph_documents_maps_as_its_pulsar_backend_does(
    tmp_path: Path,
) -> None:
    land("trustgraph", [by_number("51"), by_number("04")], tmp_path / "reg")
    registry = Registry.open(Settings.load([tmp_path / "reg"]), full=True)
    pulsar = registry.resolve("service", "custom-rag").data["pulsar"]
    assert pulsar["request_queue"] == "non-persistent://tg/request/custom-rag"
    assert pulsar["response_queue"] == "non-persistent://tg/response/custom-rag"


def test_missing_files_are_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ToolctlError, match="no such file"):
        read_import("trustgraph", [tmp_path / "absent.json"])


@needs_data
def test_files_that_repeat_each_other_import_together_as_one_after_another(
    tmp_path: Path,
) -> None:
    """Real Chat2Graph YAMLs copy each other's tools and actions: `import A B` lands what
    `import A; import B` does, each repeated entry once with one note per file; a name
    two files define differently refuses the import, every such name listed."""
    first, second = CHAT2GRAPH[0], next(p for p in CHAT2GRAPH if "basic_template" in p.name)
    together = land("chat2graph", [first, second], tmp_path / "together")
    apart = land("chat2graph", [first], tmp_path / "apart")
    apart_second = land("chat2graph", [second], tmp_path / "apart")
    assert together == apart > 0 and apart_second > 0  # the second: all of it unchanged
    files = sorted(
        p.relative_to(tmp_path / "together") for p in (tmp_path / "together").rglob("*.toml")
    )
    assert files == sorted(
        p.relative_to(tmp_path / "apart") for p in (tmp_path / "apart").rglob("*.toml")
    )
    imported = read_import("chat2graph", [first, second])
    repeated = [n for n in imported.notes if "the same: imported once" in n]
    assert len(repeated) == 1 and repeated[0].startswith(f"{second}: ")
    joke = [by_number("05"), by_number("06"), by_number("08")]  # 06 and 08 differ
    with pytest.raises(RegistryError) as refused:
        read_import("trustgraph", joke)
    assert refused.value.details == [
        f"{joke[2]}: tool 'tell-joke' differs from the one {joke[1]} gives; rename it in one "
        "of them, or leave one file out"
    ]
