"""A secret in what an import refuses is never part of the error that refuses it (an entry
without a name is described by its keys, a URL that does not parse is shown without its
password, query or fragment), and the forms of secrets people write are never copied."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from subprocess import CompletedProcess

from tests.conftest import Toolctl, write_files


def _nowhere(secret: str, done: object, registry: Path) -> None:
    shown = getattr(done, "stdout", "") + getattr(done, "stderr", "")
    assert secret not in shown
    assert all(secret not in p.read_text() for p in registry.rglob("*") if p.is_file())


def test_a_chat2graph_tool_without_a_name_is_told_by_its_keys(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    write_files(
        tmp_path,
        {
            "x.yml": "tools:\n  - type: MCP\n    mcp_transport_config: {transport_type: STDIO, "
            'command: npx, env: {OPENAI_API_KEY: "sk-proj-Hunter95PwAAAA"}, '
            'headers: {Authorization: "Bearer Hunter93Pw"}}\n'
        },
    )
    (tmp_path / "R").mkdir()
    done = toolctl("import", "chat2graph", "x.yml", "-r", "R", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "toolctl: error: x.yml: a tool without a name (it holds: mcp_transport_config, type)\n",
    )
    _nowhere("Hunter9", done, tmp_path / "R")


def test_a_url_that_does_not_parse_is_shown_without_its_password(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    url = "http://admin:Hunter8Pw@[::1/mcp?token=Hunter7Pw"
    write_files(tmp_path, {"v6.json": json.dumps({"mcpServers": {"v6": {"url": url}}})})
    (tmp_path / "R").mkdir()
    imported = toolctl("import", "mcp-config", "v6.json", "-r", "R", cwd=tmp_path)
    assert imported.returncode == 3 and "http://***@[::1/mcp?***" in imported.stderr
    _nowhere("Hunter", imported, tmp_path / "R")
    added = toolctl("mcp", "add", "s", "--url", url, "-r", "R", cwd=tmp_path)
    assert added.returncode != 0 and "http://***@[::1/mcp?***" in added.stderr
    _nowhere("Hunter", added, tmp_path / "R")


def test_the_forms_of_secrets_people_write_become_references(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {
        "upper": {"url": "HTTPS://admin:Hunter5Pw@api.example.com/mcp"},
        "remote": {
            "command": "npx",
            "args": [
                "mcp-remote",
                "https://x.example/mcp",
                "--header=Authorization: Bearer Hunter28Pw",
            ],
        },
        "conn": {"command": "srv", "env": {"CONN": "Server=db;User Id=sa;Password=Hunter26Pw;"}},
        "frag": {"url": "https://h.example/mcp#token=Hunter15Pw"},
    }
    write_files(tmp_path, {"leak.json": json.dumps({"mcpServers": servers})})
    (tmp_path / "R").mkdir()
    done = toolctl("import", "mcp-config", "leak.json", "-r", "R", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _nowhere("Hunter", done, tmp_path / "R")
    for variable in ("UPPER_PASSWORD", "REMOTE_AUTHORIZATION", "CONN_PASSWORD", "FRAG_TOKEN"):
        assert f"export {variable}=..." in done.stdout


def _import(
    tmp_path: Path, toolctl: Toolctl, servers: Mapping[str, object]
) -> CompletedProcess[str]:
    write_files(tmp_path, {"leak.json": json.dumps({"mcpServers": servers})})
    (tmp_path / "R").mkdir()
    done = toolctl("import", "mcp-config", "leak.json", "-r", "R", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _nowhere("Hunter", done, tmp_path / "R")
    return done


def test_the_password_after_p_becomes_a_reference_a_port_or_package_stays(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {
        "mysql": {"command": "mcp-mysql", "args": ["-u", "root", "-p", "Hunter3Pw"]},
        "docker": {"command": "docker", "args": ["run", "-u", "1000", "-p", "8080:80", "img"]},
        "npx": {"command": "npx", "args": ["-y", "-p", "@scope/server", "server"]},
    }
    done = _import(tmp_path, toolctl, servers)
    assert "export MYSQL_PASSWORD=...   # server 'mysql', argument 4" in done.stdout
    assert "DOCKER_" not in done.stdout and "NPX_" not in done.stdout
    services = tmp_path / "R" / "services"
    assert '"-p",\n    "${env:MYSQL_PASSWORD}",' in (services / "mysql.toml").read_text()
    assert '"8080:80"' in (services / "docker.toml").read_text()
    assert '"@scope/server"' in (services / "npx.toml").read_text()


def test_a_session_in_a_url_path_parameter_becomes_a_reference(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {"jsess": {"url": "https://h.example/mcp;jsessionid=Hunter41Pw?region=eu"}}
    done = _import(tmp_path, toolctl, servers)
    assert "export JSESS_JSESSIONID=...   # server 'jsess', url (URL path jsessionid)" in (
        done.stdout
    )
    written = (tmp_path / "R" / "services" / "jsess.toml").read_text()
    assert "/mcp;jsessionid=${env:JSESS_JSESSIONID}?region=eu" in written


def test_the_url_of_a_trustgraph_mcp_server_keeps_no_secret(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    url = "https://admin:Hunter71Pw@h.example/mcp?api_key=Hunter72Pw&region=eu"
    items = [{"key": "mcp/good", "value": {"url": url, "auth-token": "Hunter73Pw"}}]
    bad = [{"key": "mcp/bad", "value": {"url": "http://admin:Hunter70Pw@[::1/mcp#t=Hunter69"}}]
    write_files(tmp_path, {"tg.json": json.dumps(items), "bad.json": json.dumps(bad)})
    (tmp_path / "R").mkdir()
    done = toolctl("import", "trustgraph", "tg.json", "-r", "R", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _nowhere("Hunter", done, tmp_path / "R")
    assert "its url reads GOOD_API_KEY, GOOD_PASSWORD from the environment" in done.stderr
    written = (tmp_path / "R" / "services" / "good.toml").read_text()
    assert (
        'url = "https://admin:${env:GOOD_PASSWORD}@h.example/mcp'
        '?api_key=${env:GOOD_API_KEY}&region=eu"'
    ) in written
    refused = toolctl("import", "trustgraph", "bad.json", "-r", "R", cwd=tmp_path)
    assert refused.returncode == 3 and "http://***@[::1/mcp#***" in refused.stderr
    _nowhere("Hunter", refused, tmp_path / "R")


def _written(tmp_path: Path, service: str) -> str:
    return (tmp_path / "R" / "services" / f"{service}.toml").read_text()


def test_a_password_attached_to_p_becomes_a_reference_a_port_stays(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {
        "mysql": {"command": "mcp-mysql", "args": ["-u", "root", "-pHunter11Pw", "shop"]},
        "maria": {"command": "mcp-mariadb", "args": ["-uroot", "-pHunter12Pw"]},
        "docker": {
            "command": "docker",
            "args": ["run", "-u", "1000", "-p8080", "-p=9090:90", "-p", "127.0.0.1:53:53", "i"],
        },
        "prompt": {"command": "mcp-mysql", "args": ["-u", "root", "-p", "-h", "db.internal"]},
    }
    done = _import(tmp_path, toolctl, servers)
    assert "export MYSQL_PASSWORD=...   # server 'mysql', argument 3" in done.stdout
    assert "export MARIA_PASSWORD=...   # server 'maria', argument 2" in done.stdout
    assert "DOCKER_" not in done.stdout and "PROMPT_" not in done.stdout
    assert '"-p${env:MYSQL_PASSWORD}",\n    "shop",' in _written(tmp_path, "mysql")
    assert '"-uroot",\n    "-p${env:MARIA_PASSWORD}",' in _written(tmp_path, "maria")
    docker = _written(tmp_path, "docker")
    assert all(f'"{kept}"' in docker for kept in ("-p8080", "-p=9090:90", "127.0.0.1:53:53"))
    assert '"-p",\n    "-h",\n    "db.internal",' in _written(tmp_path, "prompt")


def test_sqlcmd_P_and_the_long_password_options_become_references(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {
        "mssql": {"command": "sqlcmd", "args": ["-S", "db", "-U", "sa", "-P", "Hunter13Pw"]},
        "long": {"command": "mcp-db", "args": ["--user", "me", "--password", "Hunter14Pw"]},
        "equals": {"command": "mcp-db", "args": ["--password=Hunter15Pw", "PGPASSWORD=Hunter16"]},
        "port": {"command": "mcp-mysql", "args": ["-u", "root", "-P", "3306"]},
        "psql": {"command": "psql", "args": ["-U", "me", "-P", "pager=off", "-P", "expanded"]},
    }
    done = _import(tmp_path, toolctl, servers)
    for variable, argument in [
        ("MSSQL_PASSWORD", "mssql', argument 6"),
        ("LONG_PASSWORD", "long', argument 4"),
        ("EQUALS_PASSWORD", "equals', argument 1"),
        ("EQUALS_PGPASSWORD", "equals', argument 2"),
    ]:
        assert f"export {variable}=...   # server '{argument}" in done.stdout
    assert "PORT_" not in done.stdout and "PSQL_" not in done.stdout
    assert '"-P",\n    "${env:MSSQL_PASSWORD}",' in _written(tmp_path, "mssql")
    assert '"--password",\n    "${env:LONG_PASSWORD}",' in _written(tmp_path, "long")
    assert '"--password=${env:EQUALS_PASSWORD}",' in _written(tmp_path, "equals")
    assert '"PGPASSWORD=${env:EQUALS_PGPASSWORD}",' in _written(tmp_path, "equals")
    assert '"-P",\n    "3306",' in _written(tmp_path, "port")
    assert '"-P",\n    "pager=off",\n    "-P",\n    "expanded",' in _written(tmp_path, "psql")


def test_the_password_after_a_redis_clients_a_becomes_a_reference_another_a_stays(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    redis = ["run", "-i", "-a", "stdout", "redis", "redis-cli", "-h", "cache"]
    servers = {
        "cache": {"command": "docker", "args": [*redis, "-a", "Hunter17Pw", "--no-auth-warning"]},
        "acl": {"command": "docker", "args": [*redis, "--user", "bot", "--pass", "Hunter18Pw"]},
        "ask": {"command": "docker", "args": [*redis, "--askpass", "ping"]},
        "tar": {"command": "tar", "args": ["-a", "-cf", "out.tar.gz", "src"]},
        "ls": {"command": "ls", "args": ["-a", "notes"]},
        "direct": {"command": "/usr/bin/redis-cli", "args": ["-h", "cache", "-a", "Hunter20Pw"]},
    }
    done = _import(tmp_path, toolctl, servers)
    assert "export DIRECT_PASSWORD=...   # server 'direct', argument 4" in done.stdout
    assert '"-a",\n    "${env:DIRECT_PASSWORD}",' in _written(tmp_path, "direct")
    assert "export CACHE_PASSWORD=...   # server 'cache', argument 10" in done.stdout
    assert "export ACL_PASS=...   # server 'acl', argument 12" in done.stdout
    assert not any(f"{s}_" in done.stdout for s in ("ASK", "TAR", "LS"))
    cache = _written(tmp_path, "cache")
    assert '"-a",\n    "stdout",' in cache  # docker's own -a, before redis-cli
    assert '"-a",\n    "${env:CACHE_PASSWORD}",\n    "--no-auth-warning",' in cache
    assert '"--askpass",\n    "ping",' in _written(tmp_path, "ask")
    assert '"-a",\n    "-cf",\n    "out.tar.gz",\n    "src",' in _written(tmp_path, "tar")
    assert '"-a",\n    "notes",' in _written(tmp_path, "ls")


def test_a_redis_client_as_the_command_makes_its_a_a_password() -> None:
    from toolctl.interchange.secrets import Scope, Vault, rewrite_args

    vault = Vault()
    args = ["-h", "cache", "-a", "Hunter19Pw"]
    hidden = rewrite_args(args, Scope("cache", "cache", vault), program="/usr/bin/redis-cli")
    assert hidden == ["-h", "cache", "-a", "${env:CACHE_PASSWORD}"]
    assert rewrite_args(["-a", "Hunter19Pw"], Scope("x", "x", vault), program="grep") == [
        "-a",
        "Hunter19Pw",
    ]


def test_a_bare_header_line_and_a_json_argument_keep_no_secret(
    tmp_path: Path, toolctl: Toolctl
) -> None:
    servers = {
        "bare": {"command": "mcp-x", "args": ["Authorization: Bearer Hunter21Token"]},
        "json": {
            "command": "mcp-y",
            "args": ["--config", '{"apiKey": "Hunter22Key", "mode": "fast", "n": [1]}'],
        },
        "plain": {"command": "mcp-z", "args": ["Note: hello", '{"a": 1}', "https://e.com/x"]},
    }
    done = _import(tmp_path, toolctl, servers)
    assert "export BARE_AUTHORIZATION=...   # server 'bare', argument 1" in done.stdout
    assert "export JSON_API_KEY=...   # server 'json', argument 2 (apiKey)" in done.stdout
    assert '"Authorization: Bearer ${env:BARE_AUTHORIZATION}"' in _written(tmp_path, "bare")
    config = json.loads(
        tomllib.loads(_written(tmp_path, "json"))["service"][0]["mcp"]["command"][2]
    )
    assert config == {"apiKey": "${env:JSON_API_KEY}", "mode": "fast", "n": [1]}
    plain = tomllib.loads(_written(tmp_path, "plain"))["service"][0]["mcp"]["command"]
    assert plain == ["mcp-z", "Note: hello", '{"a": 1}', "https://e.com/x"]
