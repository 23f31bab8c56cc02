"""Settings shared by the magic, the server extension and the command line.

Every setting is a traitlet with ``help=`` and ``config=True``, so it works
from ``%config``, ``ipython_config.py`` / ``jupyter_server_config.py`` and the
command line alike.  ``c.AICISettings.x`` in ``jupyter_ai_ci_config.py`` (the
command line's own file, in Jupyter's config folders) reaches every driver:
the magic and the server read it too (``apply_shared``), under their own
configuration.  ``c.AskMagics.x`` reaches only the magic.
"""

from __future__ import annotations

import os
from typing import Any

from traitlets import Bool, CaselessStrEnum, CFloat, CInt, Dict, List, Unicode, Union, validate
from traitlets.config import Configurable

from jupyter_ai_ci.config.endpoint import DEFAULT_MODEL, MODEL_ENV, OWN_REQUEST_FIELDS, EndpointSettings, JSONValue
from jupyter_ai_ci.config.safety import SafetySettings

__all__ = ["DEFAULT_MODEL", "KEY_VARIABLES", "MODEL_ENV", "OWN_REQUEST_FIELDS", "SETTINGS_ENVIRONMENT",
           "SETTINGS_ENV_PREFIXES", "SETTINGS_SECTIONS", "AICISettings", "EndpointSettings", "JSONValue",
           "SafetySettings", "apply_shared", "shared_settings"]

# The environment variables that hold the model's key: kernels a driver starts do not get them
# (AICISettings.keep_key_from_kernels); the driver's own process calls the model.
KEY_VARIABLES = ("OPENAI_API_KEY",)
# The environment variables a request reads: where it goes (the endpoint, the key, the model and
# the proxies the client honours), which replay records count as the person's, and the notebook's
# folder that writes are judged from.  Generated code that sets one is asked about
# (safety/ownsettings.py), and the magic puts it back after the request (drivers/own_settings.py).
SETTINGS_ENVIRONMENT = ("OPENAI_BASE_URL", "OPENAI_API_KEY", MODEL_ENV, "JUPYTER_AI_CI_REPLAY_KEY_FILE",
                        "JUPYTER_AI_CI_CACHE", "JUPYTER_AI_CI_KEY_KEPT", "JPY_SESSION_NAME", "HTTP_PROXY",
                        "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "SSL_CERT_FILE",
                        "SSL_CERT_DIR")
SETTINGS_ENV_PREFIXES = ("OPENAI_", "JUPYTER_AI_CI_")  # the SDK's other variables, and any of ours
# The configuration sections the magic's settings are read from (``AskMagics.section_names()``).
SETTINGS_SECTIONS = ("AskMagics", "AICISettings", "Magics", "Configurable")


class AICISettings(EndpointSettings, SafetySettings, Configurable):
    """Every setting, one class: the loop's here, the endpoint's (config/endpoint.py) and the
    safety policy's (config/safety.py) mixed in, all configured as ``c.AICISettings.x``."""

    retries = CInt(
        2,
        min=0,
        help="Fix attempts after a failed attempt (per step): at most retries+1 attempts.",
    ).tag(config=True)

    steps = CInt(
        1,
        min=1,
        help="Steps per request. With more than one, a successful step's output goes back to "
        "the model, which writes the next step or ends with prose.",
    ).tag(config=True)

    answer = CaselessStrEnum(
        ["auto", "always", "never"],
        default_value="auto",
        help="End a run with an answer in words from the model, which has seen the last step's "
        "output (one more model call): 'auto' when the request is a question (it ends with '?' "
        "or starts with what, which, who, when, where, why, how) and the last step printed or returned "
        "text; 'always' whenever it did; 'never'. A plot or a transformation is answered by its "
        "cells. %%ask --answer / --no-answer choose for one request.",
    ).tag(config=True)

    temperature = CFloat(0.0, min=0.0, max=2.0, help="Sampling temperature.").tag(config=True)

    vision = CaselessStrEnum(
        ["auto", "on", "off"],
        default_value="auto",
        help="Send the figures a step drew to the model as pictures (PNG, at most 1024 px, at most 3 "
        "a request), beside their descriptions in words, which every model gets. 'auto': when the "
        "endpoint's model list says the model takes images or, where it says nothing, the "
        "model's name is of a family that does (gpt-4o, gpt-4.1, gpt-5, Claude, Gemini, "
        "Qwen-VL, LLaVA, ...), and the endpoint is on this machine or a private network, or you "
        "allow a hosted one (figures_to_hosted, asked once by default); 'on': to this endpoint "
        "whatever it is; 'off': never. A picture cannot be masked (docs/safety.md). A model that "
        "refuses pictures is not sent them again.",
    ).tag(config=True)

    figures_to_hosted = Union(
        [CaselessStrEnum(["ask", "yes", "no"]), Bool()],
        default_value="ask",
        help="With vision 'auto': whether figures' pictures may go to a hosted endpoint (not on this "
        "machine or a private network). 'ask': the first time one would, you are asked, and the "
        "answer holds for that endpoint until the kernel (or server) restarts; 'yes' / True: send "
        "them; 'no' / False: their descriptions in words go alone. Secrets in a chart's picture "
        "cannot be masked.",
    ).tag(config=True)

    @validate("figures_to_hosted")
    def _figures_to_hosted(self, proposal: Any) -> str:
        value = proposal["value"]  # True / False, as it was a Bool before 'ask'
        return ("yes" if value else "no") if isinstance(value, bool) else str(value).lower()

    candidates = Union(
        [CaselessStrEnum(["auto"]), CInt(min=1, max=9)], default_value="auto",
        help="Candidates that must agree: after the first attempt that works, the request is asked "
        "again (sampled at candidate_temperature) for up to K-1 more solutions; each runs and is "
        "rolled back, their results are compared, and the largest group's code is applied once. The "
        "status says '2 of 2 candidates agree' or 'candidates disagree: 76 (1 of 2) vs 36', never a "
        "plain ✓ then. Code with lasting effects (files written, network) runs once. 1: no vote. "
        "'auto' (the default): 2 for a request about data on the managed local model, whose prompt "
        "cache makes the second cost about its own decoding (docs/benchmarks.md), 1 otherwise (on an "
        "endpoint a second candidate is a second request or a reply with n=2: set 2 to check there), "
        "and 1 for a Fix, under policy 'ask', and when the first candidate's code ran over 10 s. "
        "%%ask --candidates K for one request.",
    ).tag(config=True)

    candidate_temperature = CFloat(
        0.7, min=0.0, max=2.0, help="Sampling temperature of the candidates after the first.",
    ).tag(config=True)

    repeat_temperature = CFloat(
        0.7, min=0.0, max=2.0,
        help="When a fix is the very code that already failed, the request is asked anew from the "
        "start at this temperature (at temperature 0 a model tends to send the same code again); "
        "0: never sampled.",
    ).tag(config=True)

    fix_from_start = CaselessStrEnum(
        ["auto", "always", "never"], default_value="auto",
        help="How a failed attempt in a request's first step is fixed: 'always' asks the request anew, "
        "the error, its line and the hints said in words (a small model tends to copy the failed code "
        "it is shown); 'never' asks in the conversation, with the failed code's traceback; 'auto': anew "
        "for the local model the [local] extra runs, in the conversation for any other endpoint.",
    ).tag(config=True)

    max_request_kb = CInt(
        64,
        min=1,
        help="Largest request, in kB (1 kB = 1,000 bytes of UTF-8), that is sent to the model and kept in the cell's "
        "metadata; a longer one is refused with one line before anything is sent. Large data "
        "belongs in a file or a variable the request refers to.",
    ).tag(config=True)

    max_output_chars = CInt(
        4000,
        min=200,
        help="Characters of a cell's output (and of a traceback, doubled) fed back to the "
        "model; longer text keeps its head and tail with a marker.",
    ).tag(config=True)

    max_context_tokens = CInt(
        3000,
        min=200,
        help="Token budget for the notebook context sent with each request: variables, recent "
        "cells, earlier requests and the environment, in that priority. Counted with tiktoken "
        "when it is installed and its encoding is on disk, else estimated at 3.5 characters a "
        "token. The request and a retry's traceback are sent whole, outside this budget.",
    ).tag(config=True)

    context_exclude = List(
        Unicode(),
        help="Variable names kept from the model: not described, and cells that mention them "
        "left out. Shell-style patterns work (e.g. ['raw_*', 'customers']). Names that look "
        "like secrets (key, token, secret, password) are always masked.",
    ).tag(config=True)

    replay = Bool(
        True,
        help="Re-running an unchanged %%ask (same request, --steps and --no-run, model, and named "
        "variables' schema; the notebook too, for the panel and jupyter ai-ci run) reuses the code "
        "that worked instead of calling the model. --regenerate skips it.",
    ).tag(config=True)

    replay_file = Unicode(
        ".jupyter-ai-ci-replay",
        help="The folder where replay records live, one JSON file per record, relative to the "
        "kernel's working directory (the notebook's folder). Delete it, or run %ask_replay "
        "--clear, to forget them. A name ending in .json (the single file of earlier versions) "
        "means the same name without it; that file's records are moved in on first use.",
    ).tag(config=True)

    prices = Dict(
        value_trait=List(CFloat(), minlen=2, maxlen=2),
        help="USD per million tokens, {model: [input, output]}, for the cost column of %ask_usage.",
    ).tag(config=True)



SHARED_FILE = "jupyter_ai_ci_config"


def shared_settings() -> dict[str, Any]:
    """``c.AICISettings`` from every ``jupyter_ai_ci_config.py`` / ``.json`` in Jupyter's config
    folders (``jupyter --paths``), the user's over the system's, as the command line reads them."""
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config.loader import Config, JSONFileConfigLoader, PyFileConfigLoader

    merged = Config()
    for folder in reversed(jupyter_config_path()):  # the first folder wins: merged last
        for loader, suffix in ((JSONFileConfigLoader, ".json"), (PyFileConfigLoader, ".py")):
            if os.path.isfile(os.path.join(folder, SHARED_FILE + suffix)):
                merged.merge(loader(SHARED_FILE + suffix, path=folder).load_config())
    return dict(merged.get("AICISettings", {}))


def apply_shared(settings: AICISettings, own: Any) -> None:
    """Give ``settings`` what ``jupyter_ai_ci_config.py`` says of each setting its driver's own
    configuration ``own`` (IPython's, the server's) leaves unset.  Found by a newcomer: the docs
    said ``c.AICISettings`` reached every driver, and each driver read a different file.
    ``ValueError`` names the file for a value a setting refuses."""
    mine = {*own.get("AICISettings", {}), *own.get(type(settings).__name__, {})}
    for name, value in shared_settings().items():
        if name in mine or not settings.has_trait(name):
            continue
        try:
            setattr(settings, name, value)
        except Exception as exc:  # noqa: BLE001 -- a TraitError, said as one line with the file
            raise ValueError(f"{SHARED_FILE}.py: {str(exc).splitlines()[0]}") from None
