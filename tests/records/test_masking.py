"""Secrets out of stored arguments and output: descriptor variables, names, shapes."""

from __future__ import annotations

from toolctl.descriptor_env import MASK, descriptor_secrets
from toolctl.records.masking import mask_text, mask_value

TOOL = {"local": {"env": {"API_KEY": "${env:SERVICE_KEY}", "MODE": "fast"}}}
SERVICE = {"http": {"headers": {"Authorization": "Bearer ${env:SERVICE_TOKEN}"}}}
ENVIRON = {"SERVICE_KEY": "k3y-v4lue-123", "SERVICE_TOKEN": "tok-abc-999", "OTHER": "visible"}


def test_the_values_a_descriptor_passes_are_masked_wherever_they_appear() -> None:
    secrets = descriptor_secrets((TOOL, SERVICE), ENVIRON)
    assert secrets == {"k3y-v4lue-123", "tok-abc-999"}
    text = "used k3y-v4lue-123 and tok-abc-999, not visible"
    assert mask_text(text, secrets) == f"used {MASK} and {MASK}, not visible"


def test_values_under_secret_names_are_masked_at_any_depth() -> None:
    arguments = {
        "query": "weather",
        "Password": "hunter2",
        "nested": {"api_key": "abc", "client-secret": 7, "count": 3, "x_auth_token": "t"},
        "list": [{"authorization": "Basic Zm9vOmJhcg=="}],
        "empty_password": "",
    }
    assert mask_value(arguments) == {
        "query": "weather",
        "Password": MASK,
        "nested": {"api_key": MASK, "client-secret": MASK, "count": 3, "x_auth_token": MASK},
        "list": [{"authorization": MASK}],
        "empty_password": "",
    }


def test_credential_shapes_are_masked_in_text() -> None:
    samples = [
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_" + "a1B2" * 9,
        "github_pat_" + "x" * 40,
        "xoxb-1234567890-abcdefghij",
        "sk-proj-" + "Z" * 30,
        "AIza" + "S" * 35,
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    ]
    for sample in samples:
        masked = mask_text(f"before {sample} after")
        assert sample not in masked and masked.startswith("before ") and masked.endswith(" after")
    assert mask_text("Authorization: Bearer abcdefgh12345678") == f"Authorization: Bearer {MASK}"
    assert mask_text("postgres://me:s3cret@db:5432/x") == f"postgres://me:{MASK}@db:5432/x"
    assert (
        mask_text("a plain sentence with a skeleton key") == "a plain sentence with a skeleton key"
    )


def test_secret_values_of_the_arguments_are_masked_in_text_too() -> None:
    from toolctl.records.masking import secret_values

    arguments = {"user": "ada", "password": "p4ss-word", "nested": [{"api_key": 123456}]}
    assert secret_values(arguments) == {"p4ss-word", "123456"}
    assert mask_text('{"login": "ok", "pass": 1}') == '{"login": "ok", "pass": 1}'
    assert mask_text("password=hunter2&x=1") == f"password={MASK}&x=1"
    assert mask_text('{"api_key": "abc123"}') == f'{{"api_key": "{MASK}"}}'
    # JSON inside a JSON string (a tool echoing its arguments): the same pair, escaped
    import json

    nested = json.dumps({"note": json.dumps({"api_key": "zzzz-secret-12345", "n": 1})})
    assert "zzzz-secret-12345" not in mask_text(nested)
    assert json.loads(json.loads(mask_text(nested))["note"]) == {"api_key": MASK, "n": 1}


def test_a_secret_is_masked_as_a_json_string_holds_it_too() -> None:
    import json

    secret = 'Pa"ss\\wörd9876'
    for text in (json.dumps({"echo": secret}), json.dumps({"echo": secret}, ensure_ascii=False)):
        assert mask_text(text, {secret}) == '{"echo": "***"}'


def test_a_quoted_value_is_masked_whole_and_every_listed_key_is_a_secret() -> None:
    """`"secret": "two words here"` kept "words here", and `pwd`, `cookie`, `session_id`,
    `signature` (secret keys in arguments) were not secret in text."""
    text = 'ok "secret": "two words here" cookie: sessid=abc123 {"pwd": "HUNTER2PASS"}'
    assert mask_text(text) == f'ok "secret": "{MASK}" cookie: {MASK} {{"pwd": "{MASK}"}}'
    assert mask_text(r"{\"api_key\": \"a b\"}") == rf"{{\"api_key\": \"{MASK}\"}}"
    assert mask_text("db_password='x y' next") == f"db_password='{MASK}' next"
    assert mask_text("tokenizer=fast token: Bearer") == "tokenizer=fast token: Bearer"
