"""What a request may be, read from the person's settings, for every driver: the policy as the
loop reads it, judged where the kernel stands, the size a request may have, and how many
candidates must agree on it.
"""

from __future__ import annotations

from dataclasses import replace

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.context.snapshot import Snapshot
from jupyter_ai_ci.errors import UsageProblem
from jupyter_ai_ci.safety.policy import PolicySettings

__all__ = ["AUTO_CHECK_SECONDS", "candidates_for", "check_size", "judged_in", "policy_of"]

# 'auto' asks no second candidate when the first one's code ran longer than this: the check the
# person did not ask for should cost about a model reply, not a slow cell run again (or twice).
AUTO_CHECK_SECONDS = 10.0


def policy_of(s: AICISettings) -> PolicySettings:
    """The person's policy, allow and deny lists, as the loop reads them."""
    return PolicySettings(s.policy, tuple(s.allow), tuple(s.deny))  # type: ignore[arg-type]


def judged_in(policy: PolicySettings, snapshot: Snapshot) -> PolicySettings:
    """``policy`` as the kernel stands: relative writes judged from where the kernel is now, not
    where its notebook is, and names from the user's own cells (``from subprocess import run``)
    as what they are."""
    return replace(policy, moved=snapshot.moved, bindings=snapshot.bindings, folders=snapshot.folders)


def candidates_for(wanted: int | str, about_data: bool, runs_locally: bool, asks_always: bool = False) -> int:
    """The candidates a request is checked by: ``wanted`` (the setting or the request's own
    choice), 'auto' read as two for a request about data on the managed local model, one
    otherwise.  On the local model llama.cpp keeps the prompt the first candidate read, so the
    second reads about one token anew and costs its own decoding; on the DABench sample two
    candidates halved the answers wrongly shown as done at 1.2x the loop's median seconds
    (docs/benchmarks.md).  Any other endpoint's second candidate is a second request (or a reply
    with ``n``, billed by the token), not measured here.  Under policy 'ask' (``asks_always``)
    each candidate would need the person's approval, so none after the first would run
    (core/consensus.py): one."""
    if wanted == "auto":
        return 2 if about_data and runs_locally and not asks_always else 1
    return max(1, int(wanted))


def check_size(request: str, limit_kb: int) -> None:
    """Refuse a request over the limit before it reaches the model or the notebook's metadata
    (a 9 MB paste would be sent whole, and copied into every generated cell)."""
    size = len(request.encode("utf-8", "surrogatepass"))
    if size > limit_kb * 1000:
        shown, limit = _in_kb(size), f"{limit_kb} kB"
        if shown == f"{limit_kb:.1f} kB":  # "the request is 64.0 kB; the limit is 64 kB" read as no excess
            shown, limit = f"{size:,} bytes", f"{limit_kb * 1000:,} bytes ({limit_kb} kB)"
        raise UsageProblem(f"the request is {shown}; the limit is {limit} — put large data "
                           "in a file or variable and refer to it")


def _in_kb(n: int) -> str:
    # In the limit's own units (max_request_kb: decimal kB), not the binary KB of a file's size.
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"
