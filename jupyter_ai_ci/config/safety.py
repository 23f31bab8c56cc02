"""The safety policy's settings: what may run without asking, limits, undo and token budgets
(docs/safety.md).  Mixed into ``AICISettings`` (``config/__init__.py``)."""

from __future__ import annotations

from traitlets import Bool, CaselessStrEnum, CFloat, CInt, HasTraits, List, Unicode


class SafetySettings(HasTraits):
    policy = CaselessStrEnum(
        ["auto", "ask-risky", "ask"],
        default_value="ask-risky",
        help="When to ask before generated code runs: 'auto' runs everything (the deny list "
        "still applies); 'ask-risky' asks before code the scan flags (processes, deleting or "
        "overwriting files, network, eval/exec and other code run from strings or unpickled data, "
        "ctypes, sys.modules/builtins, exit, shell escapes); 'ask' asks before every attempt. With "
        "nobody to ask (no stdin, e.g. a headless run), code that needs approval is refused, never "
        "waited on.",
    ).tag(config=True)

    allow = List(
        Unicode(),
        help="Patterns (fnmatch) that need no approval: a risk kind ('network', 'process', "
        "'delete', 'write', 'shell', 'eval', 'exit'), a call ('requests.*', 'subprocess.run'), "
        "or 'pip:<package>' / 'pip:*' to install missing packages without asking.",
    ).tag(config=True)

    deny = List(
        Unicode(),
        help="Patterns (fnmatch) that are always refused, in every mode: a call or module "
        "('subprocess', 'requests.*', 'shutil.rmtree') or a risk kind ('network').",
    ).tag(config=True)

    execution_timeout = CFloat(
        300.0,
        min=0.0,
        help="Seconds a generated cell may run before it is interrupted (the kernel keeps "
        "running, the model is told it timed out). 0: no limit.",
    ).tag(config=True)

    snapshot_max_bytes = CInt(
        1 << 30,
        min=0,
        help="Largest object (bytes, estimated) copied before an attempt so a failure can be "
        "undone; bigger ones are named as not undoable. pandas objects under copy-on-write "
        "cost nothing until written and are exempt.",
    ).tag(config=True)

    undo_keep = CInt(
        10,
        min=0,
        help="Requests whose way back is kept after they worked, for %ask undo (newest kept, "
        "oldest dropped first); 0 keeps none.",
    ).tag(config=True)

    undo_memory = CInt(
        1 << 30,
        min=0,
        help="Bytes the kept ways back may hold in all (old values of the names requests changed, "
        "old contents of the files they changed); a request larger than this says so at its end.",
    ).tag(config=True)

    undo_file_cap = CInt(
        256 << 20,
        min=0,
        help="Largest file (bytes) whose old content an attempt keeps before changing it; a bigger "
        "one is named as not undoable at once.",
    ).tag(config=True)

    install_missing = Bool(
        True,
        help="On ModuleNotFoundError, offer to %pip install the package (asking first, "
        "unless 'pip:<package>' is allowed) into the kernel's own environment, then re-run.",
    ).tag(config=True)

    max_tokens_per_request = CInt(
        0, min=0, help="Token budget of one %%ask (prompt + completion, all calls). 0: none."
    ).tag(config=True)

    max_tokens_per_session = CInt(
        0, min=0, help="Token budget of all requests in one session: a kernel's for %%ask, a notebook's "
        "chat in the panel, the whole command for jupyter ai-ci run. 0: none."
    ).tag(config=True)
