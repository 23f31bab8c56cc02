"""The public surface is small and pinned; loading the extension is cheap."""

from __future__ import annotations

import subprocess
import sys

import jupyter_ai_ci


def test_public_api_is_pinned() -> None:
    assert sorted(jupyter_ai_ci.__all__) == ["__version__", "load_ipython_extension", "unload_ipython_extension"]


def test_load_ext_imports_neither_openai_nor_data_libraries() -> None:
    code = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "import sys\n"
        "ip = InteractiveShell.instance()\n"
        "before = set(sys.modules)\n"
        "ip.run_line_magic('load_ext', 'jupyter_ai_ci')\n"
        "heavy = ('openai', 'httpx', 'pandas', 'numpy', 'ipywidgets', 'matplotlib')\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in heavy))\n"
        "print('ask' in ip.magics_manager.magics['cell'], 'ask' in ip.magics_manager.magics['line'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True True"]
