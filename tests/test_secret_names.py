"""What a descriptor's shown form hides (``secret_names.hide_written``), on any input: the
descriptor surface (env, headers, URLs, command items) is whatever a file holds."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from toolctl.descriptor_env import SETTINGS
from toolctl.secret_names import hide_written, hide_written_args, written_secret

NAMES = st.sampled_from(
    [None, "API_KEY", "Authorization", "X-Api-Key", "MAX_TOKENS", "PGPASSWORD", "url", "DSN"]
) | st.text(max_size=20)
VALUES = st.text(max_size=80) | st.sampled_from(
    [
        "Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789", "postgresql://a:p@ss@db/x",
        "https://h/x?api_key=s3cr3tvalue123456&a=1#access_token=abcdef123456ghij",
        "Server=db;Password=Str0ng;", "${env:X}", "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
    ]
)  # fmt: skip


@settings(max_examples=400, derandomize=True, deadline=None)
@given(name=NAMES, value=VALUES)
def test_any_value_is_hidden_once_and_for_all(name: str | None, value: str) -> None:
    """Never an exception; hiding what is shown hides nothing more (`check` compares the
    two to say a secret is written, and the shown form must not be taken for one)."""
    shown = hide_written(name, value)
    assert isinstance(shown, str)
    assert hide_written(name, shown) == shown
    assert not written_secret(name, shown)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(items=st.lists(VALUES | st.sampled_from(["--token", "-H", "-e", "--key"]), max_size=8))
def test_any_command_is_hidden_item_by_item(items: list[str]) -> None:
    shown = hide_written_args(items)
    assert len(shown) == len(items)
    assert hide_written_args(shown) == shown


def test_every_documented_setting_reaches_a_tool_that_runs_toolctl() -> None:
    """The TOOLCTL_* variables configuration.md lists are the settings a child inherits
    (descriptor_env.SETTINGS): a setting added to one and not the other is caught here."""
    text = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"\bTOOLCTL_[A-Z_]*[A-Z]\b", text))
    assert documented and documented <= set(SETTINGS), documented - set(SETTINGS)


def test_an_authorization_value_is_written_secret_under_any_name() -> None:
    """`check` warns of ``Bearer X`` written out whatever its key (``AUTH_HEADER``), not of
    prose that starts like one."""
    from toolctl.secret_names import hide_written

    assert hide_written("AUTH_HEADER", "Bearer tok123456789") == "Bearer ***"
    assert hide_written("X_CUSTOM", "token abcd1234efgh5678") == "token ***"
    assert hide_written("NOTE", "Bearer tokens") == "Bearer tokens"
    # a name not about authentication needs a longer credential: a plan, a release
    assert hide_written("LABEL", "Basic plan2024") == "Basic plan2024"
    assert hide_written("GREETING", "Bot v2rc1alpha") == "Bot v2rc1alpha"
    assert hide_written("AUTH_HEADER", "Bearer ${env:TOKEN}") == "Bearer ${env:TOKEN}"


def test_a_percent_encoded_parameter_name_is_judged_decoded() -> None:
    """``?access%5Ftoken=X`` is ``?access_token=X`` to the server: `check` and `show` hide
    its value as they hide the plain name's."""
    from toolctl.secret_names import hide_written

    url = "https://h/mcp?access%5Ftoken=t0k3nvalue123&region=eu"
    assert hide_written("url", url) == "https://h/mcp?access%5Ftoken=***&region=eu"
