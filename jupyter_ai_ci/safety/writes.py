"""Where generated code writes: the risk scan's rules for files, folders and copies.

The working directory is the user's own folder, so a write there with a literal path
(``df.to_csv('summary.csv')``, ``plt.savefig('figs/a.png')``) is ordinary analysis and
is not flagged.  A write is flagged when its path leaves that folder (absolute, ``~``,
``..`` climbing out, a URL) or when reading the code cannot tell where it goes (a
variable bound by a loop or an argument, ``f'{base}/x'``, ``Path(x) / y``).  Paths are
followed through names bound once, ``Path(...) / '...'``, ``os.path.join`` and the like.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, replace
from typing import NamedTuple

from jupyter_ai_ci.safety.astutil import Scope, dotted
from jupyter_ai_ci.safety.links import leads_out
from jupyter_ai_ci.safety.literals import literal_text


class Finding(NamedTuple):
    kind: str
    why: str
    name: str | None = None  # overrides the call's name in the report, e.g. "open(w)"


@dataclass(frozen=True)
class Value:
    text: str | None  # the path as far as it is known; None when only running the code tells
    pathlib: bool = False  # built with pathlib, so .rename()/.replace() on it move files
    opened: bool = False  # an open file or a buffer: where it writes was judged where it was opened
    # Absolute, though written from the working directory (``Path.cwd() / 'x'`` is './x'): its
    # parent is the real one, never the lexical '.' of pathlib's ``Path('.').parent``.
    absolute: bool = False


COMPUTED = Value(None)
OPENED = Value(None, opened=True)
_PATH_TYPES = {"Path", "PurePath", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath",
               "pathlib.WindowsPath", "pathlib.PurePosixPath", "pathlib.PureWindowsPath"}
_SAME_PATH = {"str", "os.fspath", "os.path.expanduser", "os.path.expandvars", "os.path.abspath",
              "os.path.normpath", "os.path.realpath"}
_SAME_PATH_METHODS = {"expanduser", "resolve", "absolute", "as_posix", "with_suffix", "with_name", "with_stem"}
_ABSOLUTE = {"os.path.abspath", "os.path.realpath", "resolve", "absolute"}
# Calls returning a file or buffer: passing it on writes where it was opened (judged there).
_OPENERS = {"open", "io.open", "io.StringIO", "io.BytesIO", "codecs.open", "gzip.open", "bz2.open",
            "lzma.open", "tarfile.open", "zipfile.ZipFile", "pandas.ExcelWriter", "sys.stdout", "sys.stderr"}
# Functions taking (path, mode) like open(); a write mode makes them writers.
_OPEN_LIKE = {"open", "io.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open", "tarfile.open",
              "zipfile.ZipFile"}
_MODE = re.compile(r"[rwxabtU+]{1,5}")
# name -> (position of the path argument, its keyword names, verb, preposition for "computed")
_NAMED: dict[str, tuple[int, tuple[str, ...], str, str]] = {
    "numpy.save": (0, ("file",), "writes", "to"),
    "numpy.savez": (0, ("file",), "writes", "to"),
    "numpy.savez_compressed": (0, ("file",), "writes", "to"),
    "numpy.savetxt": (0, ("fname",), "writes", "to"),
    "torch.save": (1, ("f",), "writes", "to"),
    "joblib.dump": (1, ("filename",), "writes", "to"),
    "pandas.ExcelWriter": (0, ("path",), "writes", "to"),
    "pandas.to_pickle": (1, ("filepath_or_buffer",), "writes", "to"),
    "shutil.copy": (1, ("dst",), "copies", "to"),
    "shutil.copy2": (1, ("dst",), "copies", "to"),
    "shutil.copyfile": (1, ("dst",), "copies", "to"),
    "shutil.copytree": (1, ("dst",), "copies", "to"),
    "shutil.make_archive": (0, ("base_name",), "writes an archive", "at"),
    "os.makedirs": (0, ("name",), "creates a directory", "at"),
    "os.mkdir": (0, ("path",), "creates a directory", "at"),
    "os.symlink": (1, ("dst",), "creates a link", "at"),
    "os.link": (1, ("dst",), "creates a link", "at"),
}
# Methods of data objects (DataFrame, Figure, arrays, workbooks) whose first argument is where they write.
_DATA_WRITERS = {"to_csv", "to_excel", "to_parquet", "to_json", "to_pickle", "to_feather", "to_hdf", "to_stata",
                 "to_html", "to_latex", "to_markdown", "to_xml", "to_orc", "to_netcdf", "to_zarr", "to_file",
                 "savefig", "save", "tofile", "write_html", "write_image"}
_PATH_KEYWORDS = ("path", "path_or_buf", "path_or_buffer", "excel_writer", "buf", "fname", "filename",
                  "file", "fp", "filepath")
# Methods of a path object that change the file system at the receiver's path.
_PATH_METHODS = {"write_text": ("writes", "to"), "write_bytes": ("writes", "to"),
                 "touch": ("creates a file", "at"), "mkdir": ("creates a directory", "at"),
                 "symlink_to": ("creates a link", "at"), "hardlink_to": ("creates a link", "at")}


def write_findings(node: ast.Call, name: str, scope: Scope) -> list[Finding] | None:
    """How a call that writes files is judged; None when the call is not one of those."""
    method = name.rsplit(".", 1)[-1]
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    if name in _OPEN_LIKE:
        mode = _mode(node, 1)
        if mode is None:
            return []
        shown_as = f"open({mode})" if name in ("open", "io.open") else None  # as the allow/deny lists know it
        return [Finding(f.kind, f.why, shown_as) for f in _judge(_arg(node, 0, ("file", "name")), scope)]
    if name in _NAMED:
        index, keywords, verb, prep = _NAMED[name]
        found = _judge(_arg(node, index, keywords), scope, verb, prep)
        if name in ("os.symlink", "os.link"):
            found += _link_target(_arg(node, 0, ("src",)), _arg(node, 1, ("dst",)), name == "os.symlink", scope)
        return found
    if method in _DATA_WRITERS and "." in name:  # df.to_csv, plt.savefig; not a bare save() of the user's
        return _judge(_arg(node, 0, _PATH_KEYWORDS), scope)
    if receiver is None or (isinstance(receiver, ast.Name) and receiver.id in scope.aliases):
        return None  # a module's function (Image.open, os.rename): the named rules above cover files
    if method in _PATH_METHODS:
        found = _judge(receiver, scope, *_PATH_METHODS[method])
        if method in ("symlink_to", "hardlink_to"):
            found += _link_target(_arg(node, 0, ("target",)), receiver, method == "symlink_to", scope)
        return found
    if method == "open":
        return _judge(receiver, scope) if _mode(node, 0) else []
    target = _arg(node, 0, ("target",))
    if method in ("rename", "replace") and len(node.args) + len(node.keywords) == 1 and (
            path_value(receiver, scope).pathlib or (target is not None and path_value(target, scope).pathlib)):
        # Like os.rename: the target is overwritten and the source is gone, wherever they are.
        # Only when a Path is visibly involved: str.replace and DataFrame.rename are everywhere.
        return [Finding("delete", f"renames (may overwrite) a file: {shown(receiver, scope)} -> "
                                  f"{shown(target, scope)}")]
    return None  # str.replace, DataFrame.rename, ...


def _arg(node: ast.Call, index: int, keywords: tuple[str, ...]) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg in keywords:
            return keyword.value
    return node.args[index] if len(node.args) > index and not isinstance(node.args[index], ast.Starred) else None


def _mode(node: ast.Call, index: int) -> str | None:
    """The write mode an open()-like call asks for, or None when it only reads."""
    arg = _arg(node, index, ("mode",))
    if arg is None:
        return None
    mode = literal_text(arg, {}) or "w?"  # a mode only known at run time may well write
    base = mode.split(":")[0]  # tarfile's "w:gz"
    return mode if mode == "w?" or (_MODE.fullmatch(base) and re.search(r"[wax+]", base)) else None


def _judge(node: ast.expr | None, scope: Scope, verb: str = "writes", prep: str = "to") -> list[Finding]:
    if node is None:
        return []  # df.to_csv() with no path returns a string; nothing is written
    value = path_value(node, scope)
    return [] if value.opened else _judged(value, node, scope, verb, prep)


def _judged(value: Value, node: ast.expr, scope: Scope, verb: str, prep: str) -> list[Finding]:
    if value.text is None:
        return [Finding("write", f"{verb} {prep} a computed path: {_source(node)}")]
    if not scope.moved or anchored(value.text):
        if escapes(value.text):
            return [Finding("write", f"{verb} outside the working directory: {value.text!r}")]
    # Relative, so from where the kernel is now: something moved it from the notebook's folder.
    elif scope.moved == "?" or escapes(posixpath.join(scope.moved, value.text)):
        where = "outside" if scope.moved == "?" else f"at {scope.moved!r} from"
        return [Finding("write", f"{verb} outside the working directory: {value.text!r} (the kernel's working "
                                 f"directory is {where} the notebook's folder)")]
    # Inside, as it reads; a link on the way may lead out (where this process sees the folder).
    real = leads_out(value.text, scope.folders) if scope.folders is not None else None
    return [] if real is None else [
        Finding("write", f"{verb} outside the working directory: {value.text!r} (a link leads it to {real!r})")]


def _link_target(target: ast.expr | None, link: ast.expr | None, symbolic: bool, scope: Scope) -> list[Finding]:
    """A link's target, judged as a write to it: what is written through the link lands there
    (issue #38, item 4).  A symbolic link's relative target is read from the link's folder."""
    if target is None:
        return []
    value = path_value(target, scope)
    if value.text is not None and symbolic and not anchored(value.text):
        where = path_value(link, scope).text if link is not None else None
        if where is None:
            return []  # the link's own place is computed: asked about already
        value = Value(posixpath.join(posixpath.dirname(where), value.text))
    return _judged(value, target, scope, "creates a link pointing", "to")


def shown(node: ast.expr | None, scope: Scope) -> str:
    """A path for a message: the literal when it is known, else the code that computes it."""
    if node is None:
        return "?"
    value = path_value(node, scope)
    return repr(value.text) if value.text is not None else _source(node)


def _source(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


_DRIVE = re.compile(r"[A-Za-z]:")


def anchored(path: str) -> bool:
    """True when a path does not depend on the working directory (absolute, ``~``, a URL)."""
    path = path.strip()
    return path.startswith(("~", "/", "\\", "$")) or bool(_DRIVE.match(path)) or "://" in path


def escapes(path: str) -> bool:
    """True when a literal path leaves the working directory."""
    path = path.strip()
    if anchored(path):
        return True
    depth = 0
    for part in re.split(r"[\\/]+", path):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def path_value(node: ast.expr, scope: Scope, depth: int = 0) -> Value:
    """Where a path expression points, as far as reading the code tells."""
    if depth > 8:
        return COMPUTED
    text = literal_text(node, scope.values)
    if text is not None:
        return Value(text)
    if isinstance(node, ast.Constant) and node.value is None:
        return OPENED  # to_csv(None) returns the text
    if isinstance(node, ast.Name):
        return path_value(scope.values[node.id], scope, depth + 1) if node.id in scope.values else COMPUTED
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = path_value(node.left, scope, depth + 1), path_value(node.right, scope, depth + 1)
        return Value(_join([left.text, right.text]), pathlib=True, absolute=left.absolute)
    if isinstance(node, ast.Attribute):
        if dotted(node, scope.aliases) in _OPENERS:
            return OPENED
        if node.attr == "parent":
            return _parent(path_value(node.value, scope, depth + 1))
        return COMPUTED
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents" \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) and node.slice.value >= 0:
        value = path_value(node.value.value, scope, depth + 1)  # p.parents[1] is p.parent.parent
        for _ in range(node.slice.value + 1):
            value = _parent(value)
        return value
    if isinstance(node, ast.Call):
        return _call_value(node, scope, depth)
    return COMPUTED


def _call_value(node: ast.Call, scope: Scope, depth: int) -> Value:
    func = dotted(node.func, scope.aliases) or ""
    method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    values = [path_value(a, scope, depth + 1) for a in node.args]
    args = [v.text for v in values]
    if func in _PATH_TYPES:
        return Value(_join(args) if args else ".", pathlib=True)
    if func in ("pathlib.Path.home", "Path.home"):
        return Value("~", pathlib=True)
    if func in ("pathlib.Path.cwd", "Path.cwd", "os.getcwd"):
        return Value(".", pathlib=func != "os.getcwd", absolute=True)
    if func == "os.path.join":
        return Value(_join(args), absolute=bool(values) and values[0].absolute)
    if func == "os.path.dirname" and values:
        return replace(_parent(values[0]), pathlib=False)
    if func in _SAME_PATH and values:
        return Value(args[0], absolute=func in _ABSOLUTE or values[0].absolute)
    if func in _OPENERS or method == "open" or func.startswith(("tempfile.", "io.")):
        return OPENED
    if isinstance(node.func, ast.Attribute) and method in _SAME_PATH_METHODS | {"joinpath"}:
        receiver = path_value(node.func.value, scope, depth + 1)
        text = _join([receiver.text, *args]) if method == "joinpath" else receiver.text
        # with_suffix() and friends stay in the same folder
        return Value(text, pathlib=True, absolute=receiver.absolute or method in _ABSOLUTE)
    return COMPUTED


def _parent(value: Value) -> Value:
    """The folder a path is in.  Relative, it is pathlib's: ``Path('..').parent`` is '.'.
    Absolute though written from the working directory (``Path.cwd()``), it is the real one:
    ``Path.cwd().parent`` is '..' (issue #38, item 4: it was '.', inside)."""
    if value.text is None:
        return COMPUTED
    if not value.absolute or anchored(value.text):
        return Value(posixpath.dirname(value.text) or ".", True, absolute=value.absolute)
    path = posixpath.normpath(value.text)  # '.', 'a/b', '..', '../..'
    if path == ".":
        parent = ".."
    elif path == ".." or path.endswith("/.."):
        parent = f"{path}/.."
    else:
        parent = posixpath.dirname(path) or "."
    return Value(parent, True, absolute=True)


def _join(parts: list[str | None]) -> str | None:
    """Path joining as pathlib and os.path do it: an absolute part starts over."""
    joined = ""
    for part in parts:
        if part is None:
            return None
        joined = part if not joined or part.startswith(("/", "\\")) or _DRIVE.match(part) else f"{joined}/{part}"
    return joined
