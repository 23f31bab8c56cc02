"""The replay store: one signed JSON file per record in a folder beside the notebook.

``.jupyter-ai-ci-replay/<key>.json``, each written beside itself and renamed over itself
(``atomic.replace_file``): every kernel, panel and command line of a folder writes at once
without a lock and loses nothing, a put costs one file whatever the store holds, a kill in
the middle leaves at most a stray temp file, and a record reads with ``cat`` or ``jq``.  Why
this and not SQLite or a locked JSON-lines file: docs/reproducibility.md (measured).

Nothing here fails a run.  What goes wrong -- a folder that cannot be written (read-only,
full), a damaged record, a store of a newer version, the old single file that could not be
moved -- is one line to ``say`` (the run hands it to every driver), and nothing is
overwritten: a damaged record is renamed aside, a newer store is left alone.  The single
file of earlier versions (``.jupyter-ai-ci-replay.json``) is moved in on first use and kept
aside.

The folder comes with the notebook, so whoever wrote it chose what its names are: only a
regular file of bounded size is read (``safefile.read_regular``).  A record that is a named
pipe, a device, a link or a folder, or larger than ``MAX_RECORD_BYTES``, is never opened or
followed: its name alone is renamed aside, with one line, as a damaged record is.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_ai_ci.notebook import signing
from jupyter_ai_ci.notebook.atomic import replace_file
from jupyter_ai_ci.notebook.safefile import NotRead, read_regular, rename_aside, size

STORE_FORMAT = 2  # the folder's; 1 was the single JSON file
FORMAT_FILE = "FORMAT"
# A record holds a request (at most max_request_kb, 64 kB by default), the model's replies of
# each step (code and an answer in words, bounded by the model's reply length) and a few
# fields: a few kB, rarely 100 kB.  Past this it was not written by us, and is not read.
MAX_RECORD_BYTES = 8 << 20
# The single file of earlier versions held every record of a folder.
MAX_OLD_FILE_BYTES = 64 << 20
_MAX_FORMAT_BYTES = 64  # "2\n"
_KEY = re.compile(r"[A-Za-z0-9_-]{1,100}")  # replay_key makes hex digests; never a path


def valid_key(key: object) -> bool:
    return isinstance(key, str) and _KEY.fullmatch(key) is not None


def folder_for(path: str | os.PathLike[str]) -> Path:
    """The store's folder: ``replay_file`` as set, without the ``.json`` its old name had."""
    p = Path(path)
    return p.with_suffix("") if p.suffix == ".json" else p


class RecordFiles:
    """Signed records by key, each read or written alone (no rewrite of the rest).  What a
    record holds is ``notebook.replay``'s business (``ReplayStore``, this with ``Record``s)."""

    def __init__(self, path: str | os.PathLike[str], say: Callable[[str], None] | None = None) -> None:
        self.path = folder_for(path)
        self.legacy_file = self.path.with_name(self.path.name + ".json")
        self.notes: list[str] = []  # every line said, in order (the tests read them)
        self._say = say
        self._ready: bool | None = None  # None: not looked at yet; False: not usable (said why)
        self._old: dict[str, Any] = {}  # the old file's records, when they could not be moved

    def say(self, line: str) -> None:
        self.notes.append(line)
        if self._say is not None:
            self._say(f"· {line}\n")

    def _file(self, key: str) -> Path:
        return self.path / f"{key}.json"

    def _usable(self) -> bool:
        """Looked at once per store object: the folder's format, then the old file's move."""
        if self._ready is None:
            self._ready = self._check_format()
            if self._ready:
                self._old = self._migrate()
        return self._ready

    def _check_format(self) -> bool:
        try:
            text = read_regular(self.path / FORMAT_FILE, _MAX_FORMAT_BYTES).decode("utf-8", "replace").strip()
        except NotRead as exc:
            self.say(f"the replay store {self.path} is not usable: its {FORMAT_FILE} is {exc.what}, not a "
                     "file, and was not read; it is left as it is, and records are neither replayed nor kept "
                     "(remove it, or set replay_file to another name)")
            return False
        except (FileNotFoundError, NotADirectoryError):
            if self.path.exists() and not self.path.is_dir():
                self.say(f"{self.path} is not a replay store folder: it is left as it is, and records are "
                         "neither replayed nor kept (move it, or set replay_file to another name)")
                return False
            return True  # made by the first put
        except OSError as exc:
            return self._problem(exc)
        if text == str(STORE_FORMAT):
            return True
        newer = text.isdigit() and int(text) > STORE_FORMAT
        what = f"was written by a newer jupyter-ai-ci (format {text})" if newer else "has an unknown format"
        self.say(f"the replay store {self.path} {what}: it is left as it is, and records are neither replayed "
                 "nor kept (upgrade jupyter-ai-ci, or set replay_file to another name)")
        return False

    def _problem(self, exc: OSError) -> bool:
        self.say(f"cannot read the replay store {self.path} ({exc.strerror or exc}): records are neither "
                 "replayed nor kept")
        return False

    def read(self, key: str) -> dict[str, Any] | None:
        """The stored record of ``key`` as written (its ``sig`` included); None if there is none."""
        if not valid_key(key) or not self._usable():
            return None
        path = self._file(key)
        try:
            data = read_regular(path, MAX_RECORD_BYTES)
        except FileNotFoundError:
            old = self._old.get(key)
            return old if isinstance(old, dict) else None
        except NotRead as exc:
            self.set_aside(key, exc.what)
            return None
        except OSError as exc:
            self._ready = self._problem(exc)
            return None
        try:
            raw = json.loads(data.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError too
            raw = None
        if not isinstance(raw, dict) or raw.get("key") != key:
            self.set_aside(key)
            return None
        return raw

    def set_aside(self, key: str, what: str = "") -> None:
        """A damaged record (a hand edit, a file system that lost a write): kept under another
        name, so a put never overwrites it, and the request asks the model again.  A put that
        lands between our read and the rename is set aside with it: kept, though not replayed.
        ``what`` a name that is no record to read ("a named pipe", "larger than 8 MB"): only the
        name is renamed (a link is moved, never followed; a pipe or device is never opened)."""
        path = self._file(key)
        aside = rename_aside(path, ".not-read" if what else ".damaged")
        if aside is None:
            return
        if what:
            self.say(f"the replay record {path.name} is {what}, not a record file: it was not read, it is "
                     f"kept as {aside.name}, and this request asks the model again")
        else:
            self.say(f"the replay record {path.name} is damaged: kept as {aside.name}, and this request "
                     "asks the model again")

    def write(self, key: str, fields: dict[str, Any]) -> bool:
        """Store ``fields`` under ``key``, signed with this user's key.  False when it was not
        kept; the line that says why was said."""
        if not valid_key(key) or not self._usable():
            if self._ready:
                self.say(f"this request's replay record was not kept: {key!r} is not a record key")
            return False
        text = json.dumps({**fields, "sig": signing.sign(fields)}, indent=1, sort_keys=True)
        if len(text.encode("utf-8")) > MAX_RECORD_BYTES:  # it would not be read back
            self.say(f"this request's replay record was not kept: it is larger than {size(MAX_RECORD_BYTES)}")
            return False
        try:
            self._ensure_folder()
            replace_file(self._file(key), lambda f: print(text, end="", file=f))
        except OSError as exc:
            self.say(f"this request's replay record was not kept: cannot write in {self.path} "
                     f"({exc.strerror or exc}); the run itself is not affected")
            return False
        return True

    def _ensure_folder(self) -> None:
        if not (self.path / FORMAT_FILE).exists():
            self.path.mkdir(parents=True, exist_ok=True)
            replace_file(self.path / FORMAT_FILE, lambda f: print(STORE_FORMAT, file=f))

    def _write_new(self, key: str, raw: dict[str, Any]) -> None:
        """A record from the old file, as it was signed; never over one the folder has."""
        self._ensure_folder()
        target = self._file(key)
        tmp = target.with_name(f".{key}.json.{secrets.token_hex(6)}.tmp")
        try:
            with open(tmp, "x", encoding="utf-8") as f:  # "x": never through a link someone put there
                json.dump(raw, f, indent=1, sort_keys=True)
            try:
                os.link(tmp, target)  # fails if a record is there: a newer one, kept
            except FileExistsError:
                pass
            except OSError:  # no hard links on this file system: the same, less strictly
                if not target.exists():
                    os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _migrate(self) -> dict[str, Any]:
        """Move the old single file's records in (never over a record the folder has), then rename
        it aside: kept, never deleted.  Of two processes doing it at once, both copy, one renames
        and says it.  Returns its records when they cannot be moved: replayed from memory."""
        old = self.legacy_file
        try:
            data = json.loads(read_regular(old, MAX_OLD_FILE_BYTES).decode("utf-8"))
        except FileNotFoundError:
            return {}
        except NotRead as exc:  # only its name is renamed: a link is moved, never followed
            data, why = None, f"is {exc.what}, not a replay file, and was not read"
        except OSError as exc:
            self.say(f"cannot read the old replay file {old} ({exc.strerror or exc}): its records are not replayed")
            return {}
        except ValueError as exc:
            data, why = None, f"is damaged ({exc})"
        else:
            version = data.get("version") if isinstance(data, dict) else None
            why = (f"was written by a newer jupyter-ai-ci (format {version})" if isinstance(version, int)
                   and version > 1 else "is not a replay file this version can read")
        records = data.get("records") if isinstance(data, dict) and data.get("version") == 1 else None
        if not isinstance(records, dict):
            aside = rename_aside(old, ".not-migrated")
            kept = f"it is kept as {aside.name}" if aside else "it is left as it is"
            self.say(f"{old.name} {why}: its records were not moved into {self.path.name}/; {kept}")
            return {}
        good = {k: r for k, r in records.items() if valid_key(k) and isinstance(r, dict) and r.get("key") == k}
        try:
            for key, raw in good.items():
                self._write_new(key, raw)
        except OSError as exc:
            self.say(f"cannot move the records of {old.name} into {self.path.name}/ ({exc.strerror or exc}): "
                     "they are replayed from the old file, and new records are not kept")
            return good
        aside = rename_aside(old, ".migrated")
        if aside is not None:
            bad = len(records) - len(good)
            self.say(f"moved {len(good)} replay record(s) from {old.name} into {self.path.name}/, one file "
                     f"each; the old file is kept as {aside.name}" + (
                         f" ({bad} malformed record(s) stay only there)" if bad else ""))
        return {}

    def keys(self) -> list[str]:
        if not self._usable():
            return []
        try:
            found = [p.name[:-5] for p in self.path.iterdir() if p.name.endswith(".json")]
        except FileNotFoundError:
            found = []
        except OSError as exc:
            self._ready = self._problem(exc)
            return []
        return sorted({*filter(valid_key, found), *self._old})

    def forget(self, key: str) -> bool:
        """Drop one record (an undone request: Run All then asks the model); True if it was there."""
        if not valid_key(key) or not self._usable():
            return False
        try:
            self._file(key).unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            self.say(f"cannot drop the replay record {key[:8]} in {self.path} ({exc.strerror or exc})")
            return False
        return True

    def clear(self) -> int:
        """Forget every record (damaged ones set aside stay, for the user to look at)."""
        count = 0
        for key in self.keys():
            try:
                self._file(key).unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:  # a read-only folder: said, not a traceback
                self.say(f"cannot delete the replay records in {self.path} ({exc.strerror or exc})")
                return count
            count += 1
        self._sweep()
        if self._old:
            self.say(f"the records of {self.legacy_file.name} are forgotten by this kernel only: delete that "
                     "file to forget them for good")
        count += len(self._old)
        self._old = {}
        return count


    def _sweep(self) -> None:
        """Temporary files of writes killed mid-way (nothing reads them); a minute old, so a
        write under way is left to finish."""
        with contextlib.suppress(OSError):
            for p in self.path.glob(".*.tmp"):
                with contextlib.suppress(OSError):
                    if time.time() - p.stat().st_mtime > 60:
                        p.unlink()
