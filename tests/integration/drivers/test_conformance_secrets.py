"""Secrets the security review (#30) got past the masking, through every driver.

Each test performs the attack: the notebook holds the secret, generated code prints it, and
the scripted model's record of every request it received must not hold it -- in ``%%ask``,
the sidebar and ``jupyter ai-ci run`` alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

from .conftest import ENV_SECRETS
from .test_conformance import SETUP, TOKENS, TYPED, every_driver, py
from . import three

# Finding 1: values of secret-named variables shaped like words (a passphrase), not like keys.
WORDY = ["correct-horse-battery-staple", "plain-token-value-123", "correct horse battery staple"]
WORDY_SETUP = [SETUP[0], f"db_password = {WORDY[0]!r}\napi_token = {WORDY[1]!r}\ndb_passphrase = {WORDY[2]!r}"]
# Findings 4 and 5: a secret the generated code loads mid-run, from a file outside the notebook's folder.
VAULT = "vault-horse-battery-staple-42"


async def test_secrets_in_words_and_secrets_loaded_mid_run_never_reach_the_model(
        model_server: ScriptedOpenAIServer, tmp_path: Path, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    vault = tmp_path / "vault"
    vault.write_text(VAULT)
    load = f"api_secret = open({str(vault)!r}).read()"
    replies = [
        # Finding 1 and 4: prints the passphrases and the loaded secret, then fails: rolled back,
        # api_secret is gone from the kernel when the fix request is sent.
        py(f"{load}\nprint('using', api_secret, db_password, api_token, db_passphrase)\nprint(1 / 0)"),
        # Finding 5: a successful step prints the loaded secret; its output goes back for the answer.
        py(f"{load}\nprint('vault says', api_secret)", require="ZeroDivisionError"),
        Reply("The vault holds a passphrase.", tokens=TOKENS, require="vault says"),
    ]
    seen = await every_driver(model_server, tmp_path, (jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir),
                              WORDY_SETUP, "What does the vault file say?", replies, probe=("api_secret",))
    secrets = [*ENV_SECRETS.values(), *WORDY, VAULT]
    leaked = {s.driver: [secret for secret in secrets if secret in json.dumps(s.requests)] for s in seen}
    assert leaked == {"magic": [], "sidebar": [], "cli": []}
    for s in seen:
        assert s.status == "success", (s.driver, s.message)
        assert len(s.requests) == 3, s.driver
        first, fix, answer = s.texts()
        assert "db_passphrase: str (value hidden" in first, s.driver  # not described in the variable list
        assert "db_password = '***'" in first or s.driver == "magic", s.driver  # the cell's source, masked
        assert "using *** *** *** ***" in fix, s.driver  # the failed attempt's output reached the fix, masked
        assert "vault says ***" in answer, s.driver
        assert [x for x in secrets if x in json.dumps(s.records)] == [], s.driver  # nor at rest
        assert s.names == ["api_secret"] or s.driver == "cli", s.driver  # the step that worked stands


async def test_a_token_typed_into_the_request_is_masked_in_the_panels_cells_before_the_run_ends(
        model_server: ScriptedOpenAIServer, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
        jp_root_dir: Path) -> None:
    # Finding 2: each new cell got the raw request in its metadata, masked only at the end; a
    # run that ends on a model error never got there, and the saved notebook kept the token.
    request = f"Sum the prices. My token is {TYPED} and the db password is {WORDY[0]}."
    replies = [py("total = sales['Price'].sum()"), *[Reply(status=500)] * 4]  # the fix request fails
    s = await three.sidebar(model_server, jp_fetch, jp_ws_fetch, jp_serverapp, jp_root_dir, WORDY_SETUP,
                            request, replies)
    assert s.status == "error", s.message
    assert s.executes, "no cell was inserted"
    cells = json.dumps([m["metadata"] for m in s.executes])
    assert "Sum the prices. My token is ***" in cells  # the request is there, masked
    assert TYPED not in cells and WORDY[0] not in cells
