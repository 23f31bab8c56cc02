"""What the risk scan flags, as data: the calls and magics that are easy to regret, and why.

``policy`` judges code against this table (a call's resolved dotted name against each pattern,
the first match wins); the table is kept apart so that the rules can be read, and grown, in one
place.
"""

from __future__ import annotations

import re
from fnmatch import translate

_UNPICKLES = "unpickles data, which can run any code"
_CHDIR = "changes the working directory (relative writes after it land outside it)"
# Flagged for review, yet undone by a rollback (safety/transaction.py goes back to the working
# directory): not an effect that stays after a failed attempt, nor one that keeps a vote to one candidate.
UNDONE_BY_ROLLBACK = frozenset({"os.chdir", "os.fchdir", "contextlib.chdir"})
# (pattern on the resolved dotted name of the called function, kind, why)
RISKY_CALLS: tuple[tuple[str, str, str], ...] = (
    ("os.system", "process", "runs a shell command"),
    ("os.popen", "process", "runs a shell command"),
    ("os.exec*", "process", "replaces the kernel process"),
    ("os.spawn*", "process", "starts a process"),
    ("os.posix_spawn*", "process", "starts a process"),
    ("os.startfile", "process", "starts a program"),
    ("os.fork*", "process", "forks the kernel"),
    ("os.kill*", "process", "sends a signal to a process"),
    ("subprocess.*", "process", "starts a process"),
    ("pty.*", "process", "starts a process on a terminal"),
    ("asyncio.create_subprocess_*", "process", "starts a process"),
    ("IPython.utils.process.system", "process", "runs a shell command"),
    ("IPython.utils.process.getoutput*", "process", "runs a shell command"),
    ("os.remove", "delete", "deletes a file"),
    ("os.unlink", "delete", "deletes a file"),
    ("os.rmdir", "delete", "deletes a directory"),
    ("os.removedirs", "delete", "deletes directories"),
    ("os.rename", "delete", "renames (may overwrite) a file"),
    ("os.replace", "delete", "overwrites a file"),
    ("os.truncate", "delete", "truncates a file"),
    ("os.open", "write", "opens a file with OS flags (may write anywhere)"),
    # A relative path is judged as it reads, against the working directory: code that moves
    # the kernel there first would write anywhere unasked (issue #30, item 7).
    ("os.chdir", "write", _CHDIR),
    ("os.fchdir", "write", _CHDIR),
    ("contextlib.chdir", "write", _CHDIR),
    ("shutil.rmtree", "delete", "deletes a directory tree"),
    ("shutil.move", "delete", "moves (may overwrite) files"),
    ("*.unlink", "delete", "deletes a file"),
    ("*.rmdir", "delete", "deletes a directory"),
    ("*.rmtree", "delete", "deletes a directory tree"),
    ("socket.*", "network", "opens a network connection"),
    ("urllib.request.*", "network", "accesses the network"),
    ("http.client.*", "network", "accesses the network"),
    ("requests.*", "network", "accesses the network"),
    ("httpx.*", "network", "accesses the network"),
    ("urllib3.*", "network", "accesses the network"),
    ("aiohttp.*", "network", "accesses the network"),
    ("ftplib.*", "network", "accesses the network"),
    ("smtplib.*", "network", "sends mail"),
    ("paramiko.*", "network", "opens an SSH connection"),
    ("eval", "eval", "evaluates a string as code"),
    ("exec", "eval", "executes a string as code"),
    ("compile", "eval", "compiles a string as code"),
    ("runpy.*", "eval", "runs another module or file as code"),
    ("*.exec_module", "eval", "runs a module's code"),
    # Strings run as code where no string is in sight (safety/codestrings.py reads those that are).
    ("code.interact", "eval", "runs what is typed as code"),
    ("code.Interactive*", "eval", "runs strings as code"),
    ("code.compile_command", "eval", "compiles a string as code"),
    ("codeop.*", "eval", "compiles a string as code"),
    ("timeit.main", "eval", "runs strings as code"),
    ("get_ipython().run_code", "eval", "runs a code object"),
    ("get_ipython().run_ast_nodes", "eval", "runs code built at run time"),
    ("get_ipython().runcode", "eval", "runs a code object"),
    ("get_ipython().safe_*", "eval", "runs a file or module as code"),
    # Deserialising runs whatever code the data names (more in safety/codestrings.py).
    ("pickle.load*", "eval", _UNPICKLES),
    ("pickle.Unpickler", "eval", _UNPICKLES),
    ("_pickle.load*", "eval", _UNPICKLES),
    ("_pickle.Unpickler", "eval", _UNPICKLES),
    ("dill.load*", "eval", _UNPICKLES),
    ("dill.Unpickler", "eval", _UNPICKLES),
    ("cloudpickle.load*", "eval", _UNPICKLES),
    ("shelve.open", "eval", "opens a shelf, whose values are unpickled (which can run any code)"),
    ("marshal.load*", "eval", "loads code objects from data"),
    ("jsonpickle.decode", "eval", "decodes objects by their class names, which can run any code"),
    ("ctypes.*", "ctypes", "calls native code directly"),
    ("cffi.*", "ctypes", "calls native code directly"),
    ("exit", "exit", "ends the kernel"),
    ("quit", "exit", "ends the kernel"),
    ("sys.exit", "exit", "ends the program"),
    ("os._exit", "exit", "kills the kernel process"),
    ("os.abort", "exit", "kills the kernel process"),
    ("sys.modules.*", "modules", "changes sys.modules"),
    ("get_ipython().system", "shell", "runs a shell command (!)"),
    ("get_ipython().getoutput", "shell", "runs a shell command (!!)"),
    ("get_ipython().system_piped", "shell", "runs a shell command"),
    ("get_ipython().system_raw", "shell", "runs a shell command"),
)
# Line and cell magics that reach the shell, the kernel or the environment.
RISKY_MAGICS = {
    "system": "runs a shell command", "sx": "runs a shell command", "sh": "runs a shell command",
    "bash": "runs a shell script", "script": "runs a script", "reset": "clears the namespace",
    "rm": "deletes files", "rmdir": "deletes a directory", "mv": "moves files",
    "pip": "installs packages", "conda": "installs packages", "mamba": "installs packages",
    "writefile": "writes a file", "killbgscripts": "kills processes", "perl": "runs a script",
    "ruby": "runs a script", "python": "runs a separate Python process", "powershell": "runs a script",
    "cd": _CHDIR, "pushd": _CHDIR, "popd": _CHDIR,
    "python2": "runs a separate Python process", "python3": "runs a separate Python process",
    "pypy": "runs a separate Python process", "!": "runs a shell script", "file": "writes a file",
    "uv": "installs packages", "micromamba": "installs packages", "run": "runs a file as code",
    "rerun": "runs earlier input again", "edit": "starts an editor", "ed": "starts an editor",
    "save": "writes a file", "logstart": "writes a log file", "notebook": "writes a notebook file",
    "pastebin": "uploads input to a pastebin", "sc": "runs a shell command",
    # IPython's shell aliases (issue #38, item 3): a shell command line each, $(...) and all, and
    # the magics that make more of them.
    **dict.fromkeys(("cat", "clear", "cp", "ldir", "less", "lf", "lk", "ll", "ls", "lx", "man", "mkdir", "more"),
                    "runs a shell command (an alias)"),
    "alias": "makes a magic that runs a shell command", "rehashx": "makes every program on the PATH a magic",
}
WRITE_MAGICS = {"cd", "pushd", "popd"}  # judged as writes: the allow list's "write" covers them
# Magics that run their line or cell as Python in the kernel: what it holds is read (safety/codestrings.py).
CODE_MAGICS = frozenset({"time", "timeit", "prun", "capture", "debug"})
# Modules whose import by a string, or whose attributes looked up by a computed name, hide a risky call
# (IPython is imported for its display and its shell: one risky helper does not make it one of these).
HIDDEN = {p.split(".")[0] for p, _, _ in RISKY_CALLS if "." in p and not p.startswith(("*", "get_ipython"))} - {
    "IPython"}
# Every pattern in one regex, alternatives in RISKY_CALLS' order, so the first that matches wins as
# in a loop: fifty fnmatchcase calls for each call in the code cost more than the rest of the scan.
_RISKY_CALL = re.compile("|".join(f"(?P<p{i}>{translate(p)})" for i, (p, _, _) in enumerate(RISKY_CALLS)))
HIDDEN |= {"builtins", "__builtins__", "importlib", "posix", "nt", "shutil", "runpy", "code", "marshal",
            "pickle", "multiprocessing", "signal", "timeit"}
# The modules whose functions the kernel's names are read as (safety/kernelnames.py): also those
# whose functions run what they are given (``from operator import methodcaller`` in a user's cell).
KERNEL_NAMED = frozenset(HIDDEN | {"operator"})


def risky_call(name: str) -> tuple[str, str, str] | None:
    """The first RISKY_CALLS entry whose pattern matches the called name."""
    m = _RISKY_CALL.match(name)
    return None if m is None or m.lastgroup is None else RISKY_CALLS[int(m.lastgroup[1:])]
