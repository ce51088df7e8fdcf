"""Secrets in imported server configs: found per value, wherever it stands, never copied.

A value is a secret by its **name** (the env key, header, flag or query parameter it is the
value of: TOKEN, SECRET, KEY, PASSWORD, AUTH, CREDENTIAL... unless the name says it is
something about the secret, such as ``KEY_PATH`` or ``TOKEN_URL``) or by its **shape**
(a known token prefix such as ``sk-``, ``ghp_``, ``github_pat_``, ``xoxb-``, ``sbp_`` or
``AKIA``; a JWT; a long string of high entropy). Each secret becomes its own
``${env:SERVICE_NAME}`` reference: two servers' values never share a variable, the same
value within one server keeps one, and the parts that are not secret stay (``Bearer
${env:X}``, ``postgres://user:${env:X}@host/db``, ``?api_key=${env:X}&region=eu``).
A value that is not a secret is kept as it is (``NODE_ENV = "production"``).

The :class:`Vault` names the variables and remembers where each came from, for the one
line that tells the user what to export; it keeps a hash of each value, never the value.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from toolctl.secret_names import (
    PREFIXES,
    SCHEMES,
    credential,
    parameter_name,
    plain,
    secret_name,
    strong_name,
    words,
)

REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
CANDIDATE = re.compile(r"[A-Za-z0-9+/=_\-.~]{20,}")
DIGEST = re.compile(r"(?:sha1|sha224|sha256|sha384|sha512|md5):$", re.IGNORECASE)
"""What stands before a content hash, which is no secret (``image@sha256:<hex>``)."""
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def random_looking(token: str) -> bool:
    """A long token of high entropy that is not a UUID, a path, a file name or words."""
    if UUID.match(token) or token.startswith(("/", "./", "~")) or "//" in token:
        return False
    if not (re.search(r"[0-9]", token) and re.search(r"[A-Za-z]", token)):
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", token):
        return len(token) >= 32 and entropy(token) >= 3.4
    if re.search(r"[A-Za-z]{5,}[-_./][A-Za-z]{3,}", token) and not re.search(
        r"[A-Z].*[A-Z]", token
    ):
        return False  # words joined: a package, a host, a file name
    return entropy(token) >= 4.0


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where in ``text`` secrets stand by their shape (prefix, JWT or entropy)."""
    spans = [m.span() for m in PREFIXES.finditer(text)]
    for match in CANDIDATE.finditer(text):
        token = match.group().strip(".=")
        start = match.start() + match.group().index(token) if token else match.start()
        inside = any(a <= start < b for a, b in spans)
        digest = DIGEST.search(text[:start]) is not None  # an image's @sha256:..., a checksum
        if token and not inside and not digest and random_looking(token):
            spans.append((start, start + len(token)))
    return sorted(spans)


def variable_word(name: str | None) -> str:
    """The name part of a variable: the value's own name in upper snake case."""
    text = "_".join(words(name or ""))
    return text if len(text) > 2 else "SECRET"


@dataclass
class Vault:
    """The variables an import asks for: ``exports`` maps each to where its value was, and
    ``values`` to the secret itself (in memory only: `mcp add` lists the server's tools
    with it; never written, never printed)."""

    exports: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict, repr=False)
    _owners: dict[str, tuple[str, str]] = field(default_factory=dict)

    def variable(self, service: str, name: str | None, value: str, where: str) -> str:
        """The variable for secret ``value`` of ``service``: ``SERVICE_NAME``, unless the
        name already starts with the service's (``GITHUB_TOKEN`` of ``github``); the same
        value within one service keeps its variable, another value gets ``_2``..."""
        prefix = "_".join(words(service)) or "MCP"
        word = variable_word(name)
        base = word if word == prefix or word.startswith(prefix + "_") else f"{prefix}_{word}"
        digest = hashlib.sha256(value.encode()).hexdigest()
        for candidate in [base, *(f"{base}_{n}" for n in range(2, 1000))]:
            owner = self._owners.setdefault(candidate, (service, digest))
            if owner == (service, digest):
                self.exports.setdefault(candidate, where)
                self.values.setdefault(candidate, value)
                return candidate
        raise ValueError(f"too many secrets named {base}")  # pragma: no cover

    def taken(self, service: str) -> dict[str, str]:
        """The secrets taken for ``service``, each with its variable."""
        return {
            self.values[variable]: variable
            for variable, (owner, _) in self._owners.items()
            if owner == service and variable in self.values
        }

    def ask(self, variable: str, where: str) -> None:
        """The user's own variable, which the config already read from the environment."""
        self.exports.setdefault(variable, where)


@dataclass
class Scope:
    """Where values are rewritten: a service's name (for variables) and the vault."""

    service: str
    foreign: str
    vault: Vault

    def hide(self, secret: str, name: str | None, where: str) -> str:
        variable = self.vault.variable(
            self.service, name, secret, f"server '{self.foreign}', {where}"
        )
        return "${env:" + variable + "}"


def hide_known(value: Any, scope: Scope) -> Any:
    """``value`` (a server's section, rewritten) with each secret the vault took for this
    service wherever else it stands too (an argument no rule knows, a path): each value is
    judged on its own, so `--env API_KEY=X -- cmd --k X` wrote X, told it was a secret,
    into the registry in the command. ``${env:...}`` references are left as they are."""
    known = {s: v for s, v in scope.vault.taken(scope.service).items() if len(s) >= MIN_KNOWN}
    if not known:
        return value
    ordered = sorted(known, key=len, reverse=True)

    def hidden(text: str) -> str:
        parts = REFERENCE_SPLIT.split(text)  # the references at odd places, kept
        for index in range(0, len(parts), 2):
            for secret in ordered:
                parts[index] = parts[index].replace(secret, "${env:" + known[secret] + "}")
        return "".join(parts)

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return hidden(item)
        if isinstance(item, dict):
            return {key: walk(child) for key, child in item.items()}
        if isinstance(item, list):
            return [walk(child) for child in item]
        return item

    return walk(value)


MIN_KNOWN = 4
"""The shortest secret looked for everywhere else (a shorter one would match by chance)."""
REFERENCE_SPLIT = re.compile(r"(\$\{env:[^}]*\})")


def rewrite(value: str, scope: Scope, name: str | None, where: str) -> str:
    """``value`` with every secret in its literal parts replaced by a reference; the
    ``${env:...}`` references already in it stay (and are asked for)."""
    for variable in REFERENCE.findall(value):
        scope.vault.ask(variable, f"server '{scope.foreign}', {where}")
    pieces = REFERENCE.split(value)
    out = []
    for index, piece in enumerate(pieces):
        if index % 2:  # a variable's name, from the split's group
            out.append("${env:" + piece + "}")
        else:
            out.append(_literal(piece, scope, name, where, whole=len(pieces) == 1))
    return "".join(out)


def _literal(text: str, scope: Scope, name: str | None, where: str, *, whole: bool) -> str:
    if not text:
        return text
    # `Bearer X` is a secret whatever it is named (AUTH_HEADER)
    by_scheme = _authorization(text, name)
    if (secret_name(name) or by_scheme) and not plain(text) and not _setting(name, text):
        scheme = next((s for s in SCHEMES if text.startswith(s)), "")
        rest = text[len(scheme) :]
        if not rest.strip():
            return text
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", rest) and whole:
            return scheme + rewrite_url(rest, scope, where)
        return scheme + scope.hide(rest, name, where)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://\S+$", text):
        return rewrite_url(text, scope, where)
    return _shaped(text, scope, name, where)


def _json_secrets_stay_json(document: Any, scope: Scope, where: str) -> bool:
    """Whether a JSON env value can keep its shape with each secret in it a ``${env:...}``:
    it holds one, and every one is text JSON writes as it is (a PEM key's newlines would
    come back raw from the variable and break the JSON: then the whole value is hidden)."""
    import copy
    import json

    trial = Scope(scope.service, scope.foreign, copy.deepcopy(scope.vault))
    if _json_value(document, trial, None, where) == document:
        return False  # no secret inside: the value is judged whole, by its name
    found = [v for k, v in trial.vault.values.items() if k not in scope.vault.values]
    return all(json.dumps(value, ensure_ascii=False)[1:-1] == value for value in found)


def _authorization(text: str, name: str | None) -> bool:
    """An Authorization value: a scheme (``Bearer ``, ``Basic ``, ...) and a credential
    (``secret_names.credential``: not ``Bearer tokens``, ``Basic plan2024``)."""
    scheme = next((s for s in SCHEMES if text.startswith(s)), "")
    return bool(scheme) and credential(text[len(scheme) :], name)


def _setting(name: str | None, text: str) -> bool:
    """A number under a name that is a secret's only by a weak word: a setting
    (``MAX_TOKENS = 5000``, ``TOKEN_LIMIT = 200``), where ``PASSWORD = 12345678`` is not."""
    return text.strip().isdigit() and not strong_name(name)


_PAIR = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z][A-Za-z0-9 _-]{0,63})=([^;&\s]+)")  # bounded:
# from every word, an unbounded key ran to the end of a long value without "=" (O(n²))
"""``KEY=VALUE`` inside a longer value: a connection string's ``Password=...;``."""


def _shaped(text: str, scope: Scope, name: str | None, where: str) -> str:
    for start, end in reversed(secret_spans(text)):
        text = text[:start] + scope.hide(text[start:end], name, where) + text[end:]
    for match in reversed(list(_PAIR.finditer(text))):
        key, value = match.group(1), match.group(2)
        if secret_name(key) and not plain(value) and "${env:" not in value:
            hidden = scope.hide(value, key, f"{where} ({key.strip()})")
            text = text[: match.start(2)] + hidden + text[match.end(2) :]
    return text


def rewrite_url(url: str, scope: Scope, where: str) -> str:
    """A URL with its password, secret query values and secret-shaped path parts hidden."""
    try:
        parts = urlsplit(url)
    except ValueError:  # "http://[::1": not a URL after all; its shape still counts
        return _shaped(url, scope, None, where)
    netloc = parts.netloc
    before = (parts.netloc, parts.path, parts.query)
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if password and "${env:" not in password:
            password = scope.hide(password, "PASSWORD", f"{where} (URL password)")
        if "${env:" not in user and secret_spans(user):  # GitHub's `https://TOKEN:x-oauth-basic@`
            user = scope.hide(user, "KEY", f"{where} (URL user)")
        netloc = f"{user}{colon}{password}@{host}"
    path = "/".join(_path_segment(segment, scope, where) for segment in parts.path.split("/"))
    query = "&".join(_query_pair(pair, scope, where) for pair in parts.query.split("&"))
    fragment = "&".join(
        _query_pair(pair, scope, where, "fragment") for pair in parts.fragment.split("&")
    )
    if (netloc, path, query if parts.query else "", fragment) == (*before, parts.fragment):
        return url  # nothing hidden: the URL exactly as written (urlunsplit normalises)
    return urlunsplit((parts.scheme, netloc, path, query if parts.query else "", fragment))


def _path_segment(segment: str, scope: Scope, where: str) -> str:
    """A path segment hidden whole by its shape, or its parameters (``;jsessionid=X``)."""
    if segment and secret_spans(segment) == [(0, len(segment))]:
        return scope.hide(segment, "SECRET", f"{where} (URL path)")
    name, *params = segment.split(";")
    return ";".join([name, *(_query_pair(p, scope, where, "path") for p in params)])


def _query_pair(pair: str, scope: Scope, where: str, part: str = "query") -> str:
    key, equals, value = pair.partition("=")
    if not equals and pair and "${env:" not in pair and secret_spans(pair) == [(0, len(pair))]:
        # a bare token (`#eyJ...`, `?ghp_...`), which `check` warns of, and was written
        return scope.hide(pair, "TOKEN", f"{where} (URL {part})")
    if not equals or not value or "${env:" in value:
        return pair
    name = parameter_name(key)
    if (secret_name(name) and not plain(value)) or secret_spans(value) == [(0, len(value))]:
        return f"{key}={scope.hide(value, name, f'{where} (URL {part} {name})')}"
    return pair


def rewrite_map(values: Mapping[str, str], scope: Scope, where: str) -> dict[str, str]:
    """Env variables or headers: each value decided by its name and its shape, a JSON
    object's (``CONFIG_JSON = '{"token": "X"}'``, or an array of them) by each of its keys,
    as an argument's."""
    import json

    hidden: dict[str, str] = {}
    for key, value in values.items():
        place = f"{where} {key}"
        try:
            document = json.loads(value) if value.lstrip().startswith(("{", "[")) else None
        except (ValueError, RecursionError):
            document = None
        if document is not None and _json_secrets_stay_json(document, scope, place):
            inside = _json_value(document, scope, None, place)
            hidden[key] = json.dumps(inside, ensure_ascii=False)
        else:
            hidden[key] = rewrite(value, scope, key, place)
    return hidden


ENV_OPTIONS = ("-e", "--env")
HEADER_OPTIONS = ("-H", "--header")
USER_OPTIONS = ("-u", "-U", "--user", "--username")
"""Options that make the value of ``-p`` or ``-P`` a password (``mysql -u root -p X``)."""
USER_ATTACHED = re.compile(r"-[uU][A-Za-z0-9_.@-]+|--user(?:name)?=.+")
"""A user option with its value attached: ``mysql -uroot``, ``--user=root``."""
PASSWORD_OPTIONS = ("-p", "-P")
"""Options whose value is a password when a user option is present, apart or attached
(``mysql -u root -pX``, ``sqlcmd -U sa -P X``), unless it is a port (``mysql -P 3306``)."""
PORT = re.compile(r"[0-9.:\[\]]+(?:/[a-z]+)?")
PSQL_PRINT = frozenset(
    {
        "border", "columns", "csv_fieldsep", "expanded", "fieldsep", "fieldsep_zero", "footer",
        "format", "linestyle", "null", "numericlocale", "pager", "pager_min_lines", "recordsep",
        "recordsep_zero", "tableattr", "title", "tuples_only", "unicode_border_linestyle",
        "unicode_column_linestyle", "unicode_header_linestyle", "xheader_width",
    }
)  # fmt: skip
"""psql's ``-P NAME[=VALUE]`` print options (``psql -U me -P pager=off``): not passwords."""
REDIS_CLIENTS = frozenset({"redis-cli", "valkey-cli", "keydb-cli"})
"""Programs whose ``-a`` is the password (``redis-cli -a X``); elsewhere ``-a`` is a flag."""


def _program(arg: str) -> str:
    """``/usr/bin/redis-cli``, ``redis-cli.exe`` → ``redis-cli``."""
    return re.split(r"[\\/]", arg)[-1].lower().removesuffix(".exe")


def _password(option: str, value: str) -> bool:
    """Whether ``value`` of ``-p``/``-P`` (a user option present) is a password: not a port,
    not the next option (``mysql -u root -p -h db`` prompts), not docker's ``-p=8080:80``,
    not a psql print option."""
    if not value or value.startswith(("-", "=")) or PORT.fullmatch(value):
        return False
    return option == "-p" or value.partition("=")[0] not in PSQL_PRINT


HEADER_LINE = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9-]*):[ \t]*(?P<value>\S.*)", re.DOTALL)
"""An argument that is a header line (``Authorization: Bearer X``), with no option before."""


def _json_argument(arg: str, scope: Scope, where: str) -> str:
    """An argument holding a JSON object (``--config '{"apiKey": "X"}'``): each string in it
    judged under its key's name, the object written again only if one was a secret."""
    import json

    try:
        document = json.loads(arg)
    except (ValueError, RecursionError):
        return rewrite(arg, scope, None, where)
    hidden = _json_value(document, scope, None, where)
    return arg if hidden == document else json.dumps(hidden, ensure_ascii=False)


def _json_value(value: Any, scope: Scope, name: str | None, where: str) -> Any:
    if isinstance(value, str):
        return rewrite(value, scope, name, f"{where} ({name})" if name else where)
    if isinstance(value, dict):
        return {key: _json_value(item, scope, str(key), where) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_value(item, scope, name, where) for item in value]
    return value


def _attached_env(arg: str) -> tuple[str, str, str] | None:
    """``--env=KEY=X``, ``-e=KEY=X`` or docker's ``-eKEY=X`` as what comes before KEY (the
    option), KEY and X: X is KEY's value, judged under KEY's name, as ``--env KEY=X`` is."""
    if arg.startswith("-e") and ENV_PAIR.match(arg[2:]):  # -eKEY=X: the value attached
        key, _, value = arg[2:].partition("=")
        return "-e", key, value
    flag, equals, pair = arg.partition("=")
    if not equals or flag not in ENV_OPTIONS or not ENV_PAIR.match(pair):
        return None
    key, _, value = pair.partition("=")
    return flag + "=", key, value


ENV_PAIR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


_SCRIPT_PAIR = re.compile(r"(?<![\w$])([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s;&|]+)")
"""``KEY=VALUE`` as a word of a shell script: the value one word, or one quoted string."""


def _script(script: str, scope: Scope, where: str) -> str:
    """A shell's ``-c`` script with its secrets as references, the rest as written (the
    whole argument taken as a key's value lost what came after it: ``API_KEY=X exec srv``
    became ``API_KEY=${env:...}``). Its words are judged as a command's arguments are
    (``KEY=X``, ``--token X``, ``-H 'Authorization: Bearer X'``), and each secret found
    is replaced where the script writes it; a script that does not split into words (a
    quote never closed) has its ``KEY=VALUE`` words judged."""
    import shlex

    try:
        words = shlex.split(script)
    except ValueError:
        return _SCRIPT_PAIR.sub(lambda pair: _script_pair(pair, scope, where), script)
    out = script
    for before, after in zip(words, rewrite_args(words, scope, program=""), strict=True):
        secret, reference = _changed(before, after)
        if secret and secret in out:
            out = out.replace(secret, reference, 1)
    return out


def _changed(before: str, after: str) -> tuple[str, str]:
    """What ``after`` replaced in ``before`` (their common start and end taken off)."""
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    return before[start : len(before) - end], after[start : len(after) - end]


def _script_pair(pair: re.Match[str], scope: Scope, where: str) -> str:
    key, value = pair.group(1), pair.group(2)
    quote = value[0] if value[:1] in ("'", '"') and len(value) > 1 else ""
    inner = value[1:-1] if quote else value
    return f"{key}={quote}{rewrite(inner, scope, key, where)}{quote}"


def rewrite_args(args: list[str], scope: Scope, *, program: str = "") -> list[str]:
    """Command arguments: ``--token X``, ``--token=X``, ``-e KEY=X`` (docker, podman),
    ``--header "Authorization: Bearer X"`` (mcp-remote), ``KEY=X``, ``-u USER -p X``,
    ``-u USER -pX`` and ``-U USER -P X`` (database clients), ``-a X`` after a Redis client
    and ``-p X`` after sshpass (``program``, the command, or one of the arguments), and
    any argument by shape."""
    out: list[str] = []
    user = any(arg in USER_OPTIONS or USER_ATTACHED.fullmatch(arg) for arg in args)
    redis = _program(program) in REDIS_CLIENTS
    sshpass = _program(program) == "sshpass"
    previous = ""
    for position, arg in enumerate(args, start=1):
        where = f"argument {position}"
        redis = redis or _program(arg) in REDIS_CLIENTS
        named_sshpass = _program(arg) == "sshpass"
        sshpass = sshpass or named_sshpass
        option, rest = arg[:2], arg[2:]
        attached = user and option in PASSWORD_OPTIONS and _password(option, rest)  # -pX
        password = (
            (user and previous in PASSWORD_OPTIONS and _password(previous, arg))
            or (redis and previous == "-a" and not arg.startswith("-"))
            or (sshpass and previous == "-p" and not arg.startswith("-"))  # sshpass -p X
        )
        if previous == "-c" and any(char.isspace() for char in arg):  # sh -c 'K=X exec srv'
            out.append(_script(arg, scope, where))
        elif previous in ENV_OPTIONS and ENV_PAIR.match(arg):
            key, _, value = arg.partition("=")
            out.append(f"{key}={rewrite(value, scope, key, where)}")
        elif previous in HEADER_OPTIONS and ":" in arg:
            header, _, value = arg.partition(":")
            space = value[: len(value) - len(value.lstrip())]
            hidden = rewrite(value.lstrip(), scope, header.strip(), where)
            out.append(f"{header}:{space}{hidden}")
        elif arg.startswith(tuple(f"{o}=" for o in HEADER_OPTIONS)) and ":" in arg:
            flag, _, line = arg.partition("=")  # --header=Authorization: Bearer X
            header, _, value = line.partition(":")
            space = value[: len(value) - len(value.lstrip())]
            hidden = rewrite(value.lstrip(), scope, header.strip(), where)
            out.append(f"{flag}={header}:{space}{hidden}")
        elif (pair := _attached_env(arg)) is not None:  # --env=KEY=X, -eKEY=X
            before, key, value = pair
            out.append(f"{before}{key}={rewrite(value, scope, key, where)}")
        elif attached:
            out.append(option + rewrite(rest, scope, "PASSWORD", where))
        elif arg.startswith("-") and "=" in arg:
            flag, _, value = arg.partition("=")
            out.append(f"{flag}={rewrite(value, scope, flag.lstrip('-'), where)}")
        elif re.match(r"^[A-Z_][A-Z0-9_]*=", arg):
            key, _, value = arg.partition("=")
            out.append(f"{key}={rewrite(value, scope, key, where)}")
        elif password:
            out.append(rewrite(arg, scope, "PASSWORD", where))
        elif arg.lstrip().startswith("{"):
            out.append(_json_argument(arg, scope, where))
        elif previous.startswith("-") and not arg.startswith("-"):
            out.append(rewrite(arg, scope, previous.lstrip("-"), where))
        elif (head := HEADER_LINE.fullmatch(arg)) and secret_name(head["name"]):
            hidden = rewrite(head["value"], scope, head["name"], where)  # Authorization: Bearer X
            out.append(arg[: head.start("value")] + hidden)
        else:
            out.append(rewrite(arg, scope, None, where))
        if sshpass and not named_sshpass and not arg.startswith("-") and previous != "-p":
            sshpass = False  # its command began (`ssh -p 2222`: a port)
        attached_value = attached or "=" in arg  # the next argument is not this one's value
        previous = arg if arg.startswith("-") and not attached_value else ""
    return out
