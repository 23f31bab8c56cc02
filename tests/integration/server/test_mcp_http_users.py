"""An MCP session over HTTP belongs to the Jupyter user who opened it: another user of the same
server who learns its id is answered as if it did not exist."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402
from jupyter_server.auth.identity import IdentityProvider, User  # noqa: E402

from jupyter_ai_ci.testing import ScriptedOpenAIServer  # noqa: E402

HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}}


class TwoUsers(IdentityProvider):
    """A server with two users, each with a token of their own (as a hub's single-user servers
    shared through RTC, or a custom identity provider, have)."""

    def get_user(self, handler: Any) -> User | None:
        name = handler.request.headers.get("Authorization", "").removeprefix("token ")
        return User(name) if name in ("alice", "bob") else None

    def is_token_authenticated(self, handler: Any) -> bool:
        return True


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ai_ci": True},
                          "identity_provider_class": f"{__name__}.TwoUsers"},
            "AICISettings": {"local_fallback": False}}


async def test_another_users_request_with_the_session_id_finds_no_session(
        jp_fetch: Any, jp_http_port: int, jp_base_url: str, model: ScriptedOpenAIServer) -> None:
    endpoint = f"http://127.0.0.1:{jp_http_port}{jp_base_url}ai-ci/mcp"
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(timeout=60) as http:
        opened = await http.post(endpoint, json=INITIALIZE, headers={**HEADERS, "Authorization": "token alice"})
        assert opened.status_code == 200, opened.text
        sid = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(endpoint, json=initialized, headers={**HEADERS, "Authorization": "token alice",
                                                             "mcp-session-id": sid})
        bobs = await http.post(endpoint, json=listing, headers={**HEADERS, "Authorization": "token bob",
                                                                "mcp-session-id": sid})
        alices = await http.post(endpoint, json=listing, headers={**HEADERS, "Authorization": "token alice",
                                                                  "mcp-session-id": sid})
        nobody = await http.post(endpoint, json=listing, headers={**HEADERS, "mcp-session-id": sid})
    assert bobs.status_code == 404 and "Session not found" in bobs.text
    assert alices.status_code == 200 and '"run"' in alices.text
    assert nobody.status_code == 403
