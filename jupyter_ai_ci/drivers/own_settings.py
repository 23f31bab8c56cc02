"""The magic's settings are the person's: code the model wrote cannot change them.

The magic runs generated code in the kernel that holds its settings (``AskMagics``), so that
code could switch the policy off for the rest of the session (security review #38, finding 1:
``%config AskMagics.policy = 'auto'``, ``run_line_magic('config', …)``, or the attribute set
on the magic, and the next request's ``os.system`` ran unasked).  The scan asks about such
code (``safety/ownsettings.py``); this is the layer behind it, for a change that got past.

The person's values are kept here, apart from the traits: taken at the first request, and
changed only by a change made outside a request on the kernel's main thread (a person's cell:
``%config``, a config file read at load, an assignment they type).  A change made while a
request runs, from another thread, or by writing the traits' storage directly is not theirs:
the trait is put back at once where it notifies, and in any case when each request starts and
ends, which also puts back ``c.AskMagics`` in the shell's configuration (read by a new
``AskMagics``) and the environment variables the run reads (``config.SETTINGS_ENVIRONMENT``).
Every request then reads the person's values.  The sidebar and the command line keep their
settings in another process, which the kernel's code cannot reach.

Standard library and traitlets only: made when ``%load_ext`` registers the magics.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from traitlets.config import Configurable

from jupyter_ai_ci.config import SETTINGS_ENV_PREFIXES, SETTINGS_ENVIRONMENT, SETTINGS_SECTIONS

__all__ = ["OwnSettings"]

PUT_BACK = "settings change only in your own cells"


class OwnSettings:
    """The person's values of ``settings``' configurable traits, and their keeper."""

    def __init__(self, settings: Configurable) -> None:
        self.settings = settings
        self.names = tuple(sorted(type(settings).class_trait_names(config=True)))
        self.values: dict[str, Any] | None = None  # taken at the first request (``take``)
        self.running = 0  # requests under way (a %%ask inside generated code nests)
        self.said: list[str] = []  # what was put back, said when the request ends
        settings.observe(self._changed, names=list(self.names))

    def take(self) -> None:
        """The values now are the person's: call before any generated code has run."""
        self.values = {name: copy.deepcopy(getattr(self.settings, name)) for name in self.names}

    def _by_person(self) -> bool:
        return self.running == 0 and threading.current_thread() is threading.main_thread()

    def _changed(self, change: Any) -> None:
        if self.values is None:
            return  # before the first request no generated code has run
        name = change["name"]
        if self._by_person():
            self.values[name] = copy.deepcopy(change["new"])
        elif change["new"] != self.values[name]:
            self._note(name, change["new"])
            setattr(self.settings, name, copy.deepcopy(self.values[name]))

    def _note(self, name: str, value: Any) -> None:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        self.said.append(f"{type(self.settings).__name__}.{name} = {shown}")

    def _put_back(self) -> None:
        """Each trait the person did not set as it stands, as they set it (a change that did not
        notify: the traits' storage written directly, a list changed in place)."""
        assert self.values is not None
        for name in self.names:
            mine = self.values[name]
            if getattr(self.settings, name) != mine:
                self._note(name, getattr(self.settings, name))
                self.settings.set_trait(name, copy.deepcopy(mine))

    @contextmanager
    def request(self, shell: Any, say: Callable[[str], None] = print) -> Iterator[None]:
        """One request: it starts and ends with the person's settings, and what changed them
        meanwhile is put back and said."""
        if self.values is None:
            self.take()
        self._put_back()  # a change that landed between requests, not made by the person
        environ = {name: os.environ.get(name) for name in _environment()}
        config = getattr(shell, "config", None)
        sections = {s: copy.deepcopy(_section(config, s)) for s in SETTINGS_SECTIONS} if config is not None else {}
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._put_back()
            for name, value in {**dict.fromkeys(_environment()), **environ}.items():
                if os.environ.get(name) != value:
                    self.said.append(f"${name}")
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
            config = getattr(shell, "config", None)
            for section, saved in sections.items():
                if config is not None and _section(config, section) != saved:
                    self.said.append(f"c.{section}")
                    if saved is None:
                        config.pop(section, None)
                    else:
                        config[section] = saved
            if self.said and self.running == 0:
                said, self.said = sorted(set(self.said)), []
                say(f"· generated code changed {', '.join(said)}: put back ({PUT_BACK})\n")


def _section(config: Any, name: str) -> Any:
    """``config``'s section ``name``; None when it is absent or empty (reading one makes it)."""
    return (config[name] or None) if name in config else None


def _environment() -> list[str]:
    return [*SETTINGS_ENVIRONMENT, *(name for name in os.environ
                                     if name.startswith(SETTINGS_ENV_PREFIXES) and name not in SETTINGS_ENVIRONMENT)]
