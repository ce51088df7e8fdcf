"""Any ``[service.mcp.oauth]`` a file can hold: a login either runs or stops with one of
toolctl's errors (a usage error before any request, the server unreachable or refusing);
never another exception (exit 70), and never a secret in what it says."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.mcp.test_oauth import _Protected, serving
from toolctl.errors import ToolctlError
from toolctl.mcp.oauth_flow import login
from toolctl.mcp.oauth_settings import AUTH_METHODS, GRANTS, SIGNING
from toolctl.settings import Settings

SECRET = "S3CR3T"
KEYS = (
    "client_id", "client_secret", "client_metadata_url", "scope", "grant", "issuer",
    "idp_token_endpoint", "idp_id_token", "idp_client_id", "idp_client_secret",
    "token_endpoint_auth_method", "private_key_pem", "signing_algorithm",
)  # fmt: skip
VALUES = st.one_of(
    st.text(max_size=40),
    st.sampled_from([*GRANTS, *AUTH_METHODS, *SIGNING, "https://127.0.0.1:9/x", "http://[::1"]),
    st.just(f"{SECRET}-----BEGIN PRIVATE KEY-----\nxx\n-----END PRIVATE KEY-----"),
)


@pytest.fixture(scope="module")
def protected() -> Iterator[str]:
    with serving(_Protected) as server:
        yield server.url


@settings(
    max_examples=examples(120),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(oauth=st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6))
def test_any_oauth_section_ends_a_login_in_toolctls_terms(
    protected: str, oauth: dict[str, Any]
) -> None:
    said: list[str] = []
    try:
        login(Settings.load(), "saas", protected, oauth, said.append, browser=False)
    except ToolctlError as exc:
        assert SECRET not in str(exc) and "\n" not in str(exc)
    assert not any(SECRET in line for line in said)
