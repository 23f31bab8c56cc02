"""Which replay record answers a request, for every driver.

A record is found by its key: the request, the options, the model, the variables the
request names (as they were described), the earlier requests and, for the command line
and the panel, the notebook's name (``notebook.replay.replay_key``).

One case the exact key misses: a request run again in the same kernel, whose first run
*made* a variable it names.  ``%%ask set y to 7`` found no ``y`` the first time; run
again, ``y`` is there (the code made it), so its description joins the key and nothing
matched: every re-run asked the model again and could run different code (found by a
newcomer's check of docs/reproducibility.md).  So on a miss, the key is tried again
without the named variables that did not exist then, and the record counts only if its
own code binds them: a variable the user made since is new context, and asks the model.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from jupyter_ai_ci.events import Message
from jupyter_ai_ci.notebook.replay import Record, ReplayStore, earlier_requests, replay_key
from jupyter_ai_ci.run.session import CONVERSATION_TURNS
from jupyter_ai_ci.safety.maychange import may_change

MAX_LEFT_OUT = 3  # named variables tried without (a request names one or two)


def _name(description: str) -> str:
    return description.split(":", 1)[0]  # context.describe writes "name: type …"


def find(store: ReplayStore, request: str, options: dict[str, Any], model: str, named: Sequence[str],
         conversation: Sequence[Message], notebook: str) -> tuple[str, Record | None]:
    """The key to record this request under, and the record that answers it (if any)."""
    earlier = earlier_requests(request, conversation, CONVERSATION_TURNS - 1)
    key = replay_key(request, options, model, named, earlier, notebook)
    record = store.get(key)
    if record is None and not notebook:
        # The magic's records made before 26 Nov: keyed on all the earlier requests kept.
        legacy = replay_key(request, options, model, named, earlier_requests(request, conversation))
        record = store.get(legacy) if legacy != key else None
    if record is not None or not named:
        return key, record
    names = sorted({_name(d) for d in named})[:MAX_LEFT_OUT]
    for size in range(1, len(names) + 1):
        for left_out in itertools.combinations(names, size):
            kept = [d for d in named if _name(d) not in left_out]
            found = store.get(replay_key(request, options, model, kept, earlier, notebook))
            if found is not None and set(left_out) <= may_change(c.code for c in found.as_outcome().cells):
                return key, found
    return key, None
