"""How the tests are shared between pytest-xdist's workers (scripts/test.sh: ``-n 2 --dist loadfile``).

Each file runs in one worker, so its module fixtures start once, as in a serial run; the browser
tests, which wait for a page within fixed timeouts and each start a Jupyter server and Chromium, and
the tests that load the real local model, which takes the cores for a minute, run one at a time
beside the other tests.

A worker that dies (a segfault in a C extension) must cost its one test, never the run. With
pytest-xdist 3.8 it cost the run: CI printed ``replacing crashed worker gw1`` and then waited until
its 90 minutes were spent. The scheduler below mends the two ways that happens in xdist's own
scope scheduler: the dead worker's finished files are queued again as empty units that never
complete (pytest-xdist #1378), and a new worker handed one test waits for a second before it runs
the first (#1327). A unit handed to a worker that died before its crash was read goes back on the queue.
"""

from __future__ import annotations

from typing import Any

import pytest

_SERIAL = {"browser": "browser", "browser_safety": "browser",
           "test_local_model.py": "local-model", "test_local_model_security.py": "local-model",
           "test_shared_model_server.py": "local-model", "test_model_queue.py": "local-model",
           "test_bench_batched_decode.py": "local-model"}


def scope_of(nodeid: str) -> str:
    """The unit a test is scheduled in: its kind where it has one (above), else its file."""
    file = nodeid.split("::", 1)[0]
    return next((_SERIAL[part] for part in file.split("/") if part in _SERIAL), file)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with the kinds above one at a time. (Not ``loadgroup``'s marks: with
    pytest 9.2 pytest-xdist 3.8 cannot rename a test's node id, and every test ran anywhere.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByKind(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        def remove_node(self, node: Any) -> str | None:
            # What the dead worker had not finished goes back on the queue, without the test it
            # died on (xdist has reported that one failed; run again, it would kill the next worker
            # too) and without the units it had finished (sent again, they are empty and never end).
            workload: dict[str, dict[str, bool]] = self.assigned_work.pop(node)
            pending = [(scope, nodeid) for scope, unit in workload.items()
                       for nodeid, done in unit.items() if not done]
            if not pending:
                return None
            scope, crashed = pending[0]
            workload[scope][crashed] = True
            for scope, unit in workload.items():
                if not all(unit.values()):
                    self.workqueue[scope] = unit
            for other in self.assigned_work:
                if other in self.registered_collections:  # not one still collecting (it has no list yet)
                    self._reschedule(other)
            return crashed

        def _assign_work_unit(self, node: Any) -> None:
            # A worker can die after it reported a test and before that report is read here, its
            # crash not yet seen: the unit it is handed then cannot be sent (CI, 5 Dec: "OSError:
            # cannot send (already closed?)" ended the run). The unit goes back to the head of the
            # queue; remove_node, which comes next, finds the test the worker died on as before.
            scope = next(iter(self.workqueue))  # the unit xdist's own code hands out next
            try:
                super()._assign_work_unit(node)
            except OSError as exc:  # execnet says so of any send that fails
                self.log("cannot send to", node.gateway.id, f"({exc}): the unit goes back on the queue")
                self.workqueue[scope] = self.assigned_work[node].pop(scope)
                self.workqueue.move_to_end(scope, last=False)

        def schedule(self) -> None:
            super().schedule()
            # A worker runs a test once it knows the next one (or that none is left): one that was
            # handed a single test must get another unit, or be told there is none.
            for node in self.nodes:
                if node.shutting_down or self._pending_of(self.assigned_work.get(node, {})) != 1:
                    continue
                if self.workqueue:
                    self._assign_work_unit(node)
                else:
                    node.shutdown()

    return ByKind(config, log)
