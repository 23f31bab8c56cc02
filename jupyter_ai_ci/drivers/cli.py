"""``jupyter ai-ci run NOTEBOOK… --prompt "…"``: the agent loop from the command line.

A traitlets ``JupyterApp``, so every option is also configuration
(``c.RunApp.jobs = 4``, ``c.AICISettings.model = …`` in
``jupyter_ai_ci_config.py``), and ``jupyter ai-ci`` finds the
``jupyter-ai-ci`` script like any Jupyter subcommand.  Runs are driven with
asyncio: ``--jobs`` notebooks at once, each with its own kernel.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

from jupyter_core.application import JupyterApp, base_aliases, base_flags
from traitlets import Bool, CFloat, CInt, TraitError, Unicode, default
from traitlets.config.loader import KVArgParseConfigLoader, _KVArgParser

from jupyter_ai_ci import __version__
from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.drivers.headless import (
    EXIT_INTERRUPTED,
    EXIT_MODEL,
    EXIT_TERMINATED,
    EXIT_USAGE,
    KernelOptions,
    RunResult,
    error_exit,
    run_notebook,
    stop_on_sigterm,
    summary,
)
from jupyter_ai_ci.drivers.server import keep_keys_from_kernels
from jupyter_ai_ci.drivers.terminal import TerminalApprover, TerminalReporter
from jupyter_ai_ci.errors import AICIError, UsageProblem
from jupyter_ai_ci.run.request import Options, Run
from jupyter_ai_ci.run.session import Session


class BadOption(Exception):
    pass


def _unknown(name: str, options: Iterable[Any]) -> str:
    """``unknown option --retires (did you mean --retries?)``: the closest of ``options``."""
    close = difflib.get_close_matches(name, [k for k in options if isinstance(k, str) and len(k) > 1], n=1)
    return f"unknown option --{name}" + (f" (did you mean --{close[0]}?)" if close else "")


class _Parser(_KVArgParser):
    def error(self, message: str) -> NoReturn:  # argparse printed its whole usage above the line
        raise BadOption(message.removeprefix("argument "))


class _StrictLoader(KVArgParseConfigLoader):
    # traitlets warns of an unknown option and goes on: `--retires 0` in a CI job then ran
    # with the default retries and exited 0 (found by a newcomer's check of docs/headless.md).
    parser_class = _Parser

    def _handle_unrecognized_alias(self, arg: str) -> None:
        raise BadOption(_unknown(arg.replace("_", "-"), (*self.aliases, *self.flags)))


class RunApp(JupyterApp):
    name = "jupyter-ai-ci-run"
    version = __version__
    description = """Run a request against notebooks, headless: start a kernel for each (locally, or on a
    Kernel/Enterprise Gateway), let the model write code, run it, fix it from the traceback,
    append the cells that worked (with outputs and provenance) and save. Code the policy flags
    (c.AICISettings.policy, allow, deny) is run after you answer y on the terminal, or with
    --yes; with no terminal on stdin it is refused. A failed attempt is undone in the kernel.
    Exit status: 0 done, 1 gave up, 2 usage, 3 model endpoint, 4 kernel or gateway, 5 an
    existing cell raised, 6 refused by policy, 7 over the token budget, 130 interrupted (Ctrl-C),
    143 stopped (SIGTERM); an interrupted or stopped notebook is unchanged. With several
    notebooks, each fails alone and the status is the first failure's."""
    examples = 'jupyter ai-ci run analysis.ipynb --prompt "Plot revenue per region from sales.csv"'
    classes = [AICISettings]

    prompt = Unicode("", help="The request.").tag(config=True)
    prompt_file = Unicode("", help="Read the request from this file ('-': stdin).").tag(config=True)
    run_existing = Bool(False, help="Run the notebook's cells first, so the context is real.").tag(config=True)
    kernel_name = Unicode("python3", help="Kernel to start (a kernelspec name).").tag(config=True)
    gateway_url = Unicode(help="Kernel/Enterprise Gateway URL; empty: a local kernel. "
                               "Default: $JUPYTER_GATEWAY_URL.").tag(config=True)
    gateway_token = Unicode(help="Gateway auth token. Default: $JUPYTER_GATEWAY_AUTH_TOKEN.").tag(config=True)
    jobs = CInt(1, help="Notebooks run at once, each with its own kernel.").tag(config=True)
    timeout = CFloat(600.0, help="Seconds a generated cell may run before it is interrupted "
                                 "(the model is told, and may fix it).").tag(config=True)
    receive_timeout = CFloat(5.0, help="Seconds without a kernel message before checking that the "
                                       "kernel lives (and gateway request timeout).").tag(config=True)
    startup_timeout = CFloat(60.0, help="Seconds to wait for a kernel to start.").tag(config=True)
    json_file = Unicode("", help="Also write a JSON record of every run here (status, attempts, "
                                 "tokens, seconds), for scripts and CI.").tag(config=True)
    regenerate = Bool(False, help="Ask the model even when the replay store beside the notebook has an "
                                  "answer to this request.").tag(config=True)
    yes = Bool(False, help="Approve what the policy would ask about (flagged code) without asking; "
                           "the deny list still applies, and code from a replay record your key did not "
                           "sign is still asked about. Without it and with no terminal on stdin, "
                           "such code is refused (exit status 6).").tag(config=True)

    @default("config_file_name")
    def _default_config_file_name(self) -> str:
        # One file for every driver: ~/.jupyter/jupyter_ai_ci_config.py (config.apply_shared), or --config FILE.
        return "jupyter_ai_ci_config"

    @default("gateway_url")
    def _default_gateway_url(self) -> str:
        return os.environ.get("JUPYTER_GATEWAY_URL", "")

    @default("gateway_token")
    def _default_gateway_token(self) -> str:
        return os.environ.get("JUPYTER_GATEWAY_AUTH_TOKEN", "")

    aliases = {
        **base_aliases,
        "prompt": "RunApp.prompt", "prompt-file": "RunApp.prompt_file", "kernel": "RunApp.kernel_name",
        "gateway-url": "RunApp.gateway_url", "gateway-token": "RunApp.gateway_token", "jobs": "RunApp.jobs",
        "timeout": "RunApp.timeout", "receive-timeout": "RunApp.receive_timeout",
        "startup-timeout": "RunApp.startup_timeout", "json": "RunApp.json_file", "model": "AICISettings.model",
        "retries": "AICISettings.retries", "steps": "AICISettings.steps", "candidates": "AICISettings.candidates",
        "policy": "AICISettings.policy", "allow": "AICISettings.allow", "deny": "AICISettings.deny",
        "max-tokens-per-request": "AICISettings.max_tokens_per_request",
        "max-tokens-per-session": "AICISettings.max_tokens_per_session",
    }
    flags = {
        # Jupyter's own -y ("answer yes to any prompts") is what --yes does here: the only
        # prompts are ours.  Left as Jupyter's, it sat beside --yes in --help and approved nothing.
        **{name: flag for name, flag in base_flags.items() if name != "y"},
        "y": ({"RunApp": {"yes": True}}, "The same as --yes."),
        "run-existing": ({"RunApp": {"run_existing": True}}, "Run the existing cells first."),
        "yes": ({"RunApp": {"yes": True}}, "Approve flagged code without asking (the deny list still applies)."),
        "regenerate": ({"RunApp": {"regenerate": True}}, "Ask the model again instead of replaying."),
        "answer": ({"AICISettings": {"answer": "always"}},
                   "End with an answer in words whenever the last step printed text (default: questions)."),
        "no-answer": ({"AICISettings": {"answer": "never"}}, "No answer in words: the cells are the answer."),
    }

    def _create_loader(self, argv: Any, aliases: Any, flags: Any, classes: Any) -> KVArgParseConfigLoader:
        return _StrictLoader(argv, aliases, flags, classes=classes, log=self.log, subcommands=self.subcommands)

    def parse_command_line(self, argv: Any = None) -> None:
        # Unwrapped: traitlets' own wrapper logs a bad value as CRITICAL and exits 1 (`--jobs x`).
        parse = getattr(JupyterApp.parse_command_line, "__wrapped__", JupyterApp.parse_command_line)
        try:
            parse(self, argv)
        except BadOption as exc:
            self.fail(EXIT_USAGE, f"{self._worded(str(exc))}; see jupyter ai-ci run --help")
        except TraitError as exc:
            self.fail(EXIT_USAGE, str(exc).splitlines()[0])

    def _worded(self, message: str) -> str:
        """argparse's words for a flag without its value, in ours: an unknown `--regenrate` is
        taken for an option that needs a value, and `--retries` shows as its config name."""
        name, _, rest = message.partition(": ")
        if rest != "expected one argument" or not name.startswith("--"):
            return message
        targets = {target: alias for alias, target in self.aliases.items() if isinstance(alias, str)}
        if name[2:] in targets:
            return f"--{targets[name[2:]]} needs a value"
        if name[2:] in self.aliases:
            return f"{name} needs a value"
        return _unknown(name[2:], (*self.aliases, *self.flags))

    def fail(self, code: int, message: str) -> NoReturn:
        print(f"jupyter ai-ci: {message}", file=sys.stderr)
        raise SystemExit(code)

    def request(self) -> str:
        if self.prompt and self.prompt_file:
            self.fail(EXIT_USAGE, "give --prompt or --prompt-file, not both")
        if self.prompt_file:
            try:
                text = sys.stdin.read() if self.prompt_file == "-" else Path(self.prompt_file).read_text()
            except OSError as exc:
                self.fail(EXIT_USAGE, f"cannot read --prompt-file: {exc.strerror}: {self.prompt_file}")
            return text.strip()
        return str(self.prompt).strip()

    def start(self) -> None:
        request = self.request()
        paths = [Path(p) for p in self.extra_args]
        if not paths:
            self.fail(EXIT_USAGE, 'name a notebook: jupyter ai-ci run NOTEBOOK.ipynb --prompt "…"')
        if not request:
            self.fail(EXIT_USAGE, 'give a request with --prompt "…" or --prompt-file FILE')
        if self.jobs < 1:
            self.fail(EXIT_USAGE, "--jobs must be at least 1")
        try:
            settings = AICISettings(parent=self)
        except TraitError as exc:
            self.fail(EXIT_USAGE, str(exc).splitlines()[0])
        if settings.keep_key_from_kernels:
            # As the Jupyter server does: this process calls the model; the kernels it starts run
            # code that could print the key into the notebook it saves, or read it from
            # /proc/<this pid>/environ.
            keep_keys_from_kernels(settings, os.environ)
        session = Session(settings)
        options = Options(regenerate=self.regenerate, yes=self.yes)
        try:
            first = Run(session, request, options)
            first.check()  # before any kernel starts
        except UsageProblem as exc:  # e.g. a request over max_request_kb
            self.fail(EXIT_USAGE, str(exc))
        except AICIError as exc:
            self.fail(EXIT_MODEL, str(exc))
        kernel = KernelOptions(
            kernel_name=self.kernel_name, gateway_url=self.gateway_url, gateway_token=self.gateway_token,
            run_existing=self.run_existing, timeout=self.timeout, receive_timeout=self.receive_timeout,
            startup_timeout=self.startup_timeout, hide_keys=settings.keep_key_from_kernels)
        try:
            results = asyncio.run(run_all(paths, session, request, options, kernel, self.jobs,
                                          first.endpoint.model))
        except KeyboardInterrupt:
            self.fail(EXIT_INTERRUPTED, "interrupted; notebooks not yet finished were not changed")
        except asyncio.CancelledError:  # SIGTERM (stop_on_sigterm)
            self.fail(EXIT_TERMINATED, "stopped (SIGTERM); notebooks not yet finished were not changed")
        if self.json_file:
            Path(self.json_file).write_text(summary(results) + "\n")
        calls, prompt, completion = session.usage.total()
        if calls and len(paths) > 1:  # one notebook's line already says its tokens
            print(f"· usage: {calls} model request{'' if calls == 1 else 's'}, {prompt} in / {completion} out tokens",
                  file=sys.stderr)
        codes = [r.exit_code for r in results if r.exit_code]
        raise SystemExit(codes[0] if codes else 0)


async def run_all(paths: list[Path], session: Session, request: str, options: Options, kernel: KernelOptions,
                  jobs: int, model: str = "model") -> list[RunResult]:
    """Every notebook, ``jobs`` at a time; each result line printed as it finishes.  One
    session: the token budget per session spans the command's notebooks."""
    stop_on_sigterm()
    gate = asyncio.Semaphore(jobs)
    asking = asyncio.Lock()  # one question on the terminal at a time
    alone = len(paths) == 1

    async def one(path: Path) -> RunResult:
        async with gate:
            label = "" if alone else f"[{path.name}] "
            reporter = TerminalReporter(label, sys.stderr, show_text=alone and sys.stderr.isatty(), model=model)
            approver = TerminalApprover(label, sys.stderr, asking, sys.stdin)
            try:
                result = await run_notebook(path, session, request, options, kernel, reporter, approver)
            except AICIError as exc:
                result = error_exit(path, exc)
            mark, out = ("✓", sys.stdout) if result.exit_code == 0 else ("✗", sys.stderr)
            print(f"{mark} {path}: {result.message}", file=out, flush=True)
            answer = result.outcome.answer.strip() if result.outcome is not None and result.exit_code == 0 else ""
            if answer:  # the answer in words, as the notebook's last (Markdown) cell has it
                print("\n".join(f"  {label}{line}" for line in answer.splitlines()), file=out, flush=True)
            return result

    return list(await asyncio.gather(*(one(p) for p in paths)))


class AICIApp(JupyterApp):
    name = "jupyter-ai-ci"
    version = __version__
    description = "jupyter-ai-ci from the command line."
    subcommands: dict[str, Any] = {
        "run": (RunApp, "Run a request against notebooks, headless, and append the generated cells."),
        "mcp": ("jupyter_ai_ci.drivers.mcp.app.MCPApp",
                "Serve the tools (ask, run, context, undo) to agents over MCP (docs/mcp.md)."),
    }

    def start(self) -> None:
        if self.subapp is None:
            self.print_help()
            print("\nsubcommands: run, mcp (jupyter ai-ci run --help, jupyter ai-ci mcp --help)")
            raise SystemExit(EXIT_USAGE)
        self.subapp.start()


main = launch_new_instance = AICIApp.launch_instance

if __name__ == "__main__":
    main()
