"""``local:hf:OWNER/REPO/FILE.gguf``: found through huggingface_hub's real cache, offline.

Each case runs in a fresh interpreter: huggingface_hub reads ``HF_HUB_OFFLINE`` and its cache
folder when it is imported.  The cache is laid out as huggingface_hub writes it (refs/main
naming a snapshot that holds the file), so its own lookup finds it; nothing downloads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_ai_ci.errors import ModelUnreachable
from jupyter_ai_ci.model import hub

pytest.importorskip("huggingface_hub")

COMMIT = "0123456789abcdef0123456789abcdef01234567"
FETCH = """
import json, sys
from pathlib import Path
from jupyter_ai_ci.model import local
from jupyter_ai_ci.model.endpoint import Endpoint
if sys.argv[2] == "no-hub":
    sys.modules["huggingface_hub"] = None  # as if it were not installed
said = []
try:
    path = local.materialize(local.target(Endpoint(model=sys.argv[1])), said.append)
    print(json.dumps({"path": str(path), "data": path.read_text(), "said": said}))
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
"""


def hub_cache(root: Path, repo: str, files: dict[str, str]) -> Path:
    """A Hugging Face cache holding ``files`` of ``repo`` at refs/main."""
    model = root / f"models--{repo.replace('/', '--')}"
    (model / "refs").mkdir(parents=True)
    (model / "refs" / "main").write_text(COMMIT)
    for name, text in files.items():
        target = model / "snapshots" / COMMIT / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def fetch(tmp_path: Path, model: str, mode: str = "", hf: str = "hf") -> dict[str, object]:
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / hf), "HF_HUB_OFFLINE": "1",
           "JUPYTER_AI_CI_CACHE": str(tmp_path / "ours")}
    done = subprocess.run([sys.executable, "-c", FETCH, model, mode], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_cached_hub_file_is_found_offline_and_linked_into_our_cache(tmp_path: Path) -> None:
    hub_cache(tmp_path / "hf", "someone/coder-GGUF", {"q4/coder-q4.gguf": "GGUF weights"})
    got = fetch(tmp_path, "local:hf:someone/coder-GGUF/q4/coder-q4.gguf")
    assert got["data"] == "GGUF weights"
    path = Path(str(got["path"]))
    assert path == tmp_path / "ours" / "hf" / "someone--coder-GGUF" / "q4" / "coder-q4.gguf"
    assert path.is_symlink() and (tmp_path / "hf") in path.resolve().parents  # a link, not a copy
    assert got["said"] == ["· fetching someone/coder-GGUF/q4/coder-q4.gguf into the Hugging Face cache (once)\n"]
    # Linked once: the next start finds it without asking the Hub (here: pointed at an empty cache).
    again = fetch(tmp_path, "local:hf:someone/coder-GGUF/q4/coder-q4.gguf", hf="empty")
    assert again["data"] == "GGUF weights" and again["said"] == []


def test_not_cached_and_offline_is_one_line_that_says_what_to_do(tmp_path: Path) -> None:
    hub_cache(tmp_path / "hf", "someone/coder-GGUF", {"other.gguf": "x"})
    got = fetch(tmp_path, "local:hf:someone/coder-GGUF/missing.gguf")
    assert got["error"] == "WeightsError"
    message = str(got["message"])
    assert message.startswith("could not get someone/coder-GGUF/missing.gguf from the Hugging Face Hub or its cache")
    assert "hf download someone/coder-GGUF missing.gguf" in message and "\n" not in message
    assert not (tmp_path / "ours" / "hf" / "someone--coder-GGUF" / "missing.gguf").exists()


def test_without_huggingface_hub_it_says_how_to_get_it(tmp_path: Path) -> None:
    got = fetch(tmp_path, "local:hf:someone/coder-GGUF/coder.gguf", "no-hub")
    assert got["error"] == "WeightsError" and "needs huggingface_hub" in str(got["message"])


@pytest.mark.parametrize("spec", ["hf:someone/coder.gguf", "hf:someone/repo/../../../etc/passwd.gguf",
                                  "hf:someone/repo/notes.txt", "hf:someone//x.gguf", "hf:/abs/repo/x.gguf"])
def test_names_that_are_not_a_hub_file_are_refused(spec: str) -> None:
    with pytest.raises(ModelUnreachable, match="is not a Hub model: write local:hf:OWNER/REPO/FILE.gguf"):
        hub.address(spec)
