"""Execute examples/quickstart.ipynb end to end, headless (nbclient), against the
configured endpoint; save examples/quickstart.out.ipynb and print what each
cell showed.

Every cell runs even if a model fails a request (a small model will): each
failed %%ask shows its one-line error and is counted.  Exit status 0 when the
notebook ran to the end and its own cells worked; 1 otherwise."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from jupyter_ai_ci.executors.local_kernel import private_sockets, remove_sockets

HERE = Path(__file__).parent
BOLD, DIM, END = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")


def show(cell: nbformat.NotebookNode) -> None:
    first = cell.source.splitlines()[0] if cell.source else ""
    print(f"\n{BOLD}In: {first}{END}" + (f"{DIM} …{END}" if "\n" in cell.source else ""))
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            sys.stdout.write(out.text)
        elif out.output_type == "error":
            print("\n".join(out.traceback))
        else:
            data = out.get("data", {})
            print(str(data.get("text/plain", "")) + (" [image/png]" if "image/png" in data else ""))


def main() -> int:
    source = HERE / "quickstart.ipynb"
    target = HERE / "quickstart.out.ipynb"
    nb = nbformat.read(source, as_version=4)
    # The kernel listens on Unix sockets only this user can open, as `jupyter ai-ci run`'s does.
    transport, folder = private_sockets()
    try:
        NotebookClient(nb, timeout=1800, allow_errors=True, resources={"metadata": {"path": str(HERE)}},
                       km=AsyncKernelManager(kernel_name="python3", **transport)).execute()
    except (DeadKernelError, CellTimeoutError) as exc:
        nbformat.write(nb, target)
        print(f"the notebook's kernel stopped: {type(exc).__name__}: {exc}; partial results in {target}")
        return 1
    finally:
        remove_sockets(folder)
    nbformat.write(nb, target)
    asks = ok = broken = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        show(cell)
        failed = any(o.output_type == "error" for o in cell.outputs)
        if cell.source.lstrip().startswith("%%ask") or cell.source.lstrip().startswith("%ask "):
            asks += 1
            ok += not failed
        elif failed:
            broken += 1
    print(f"\n{BOLD}{ok} of {asks} requests succeeded{END}; saved {target}")
    if broken:
        print(f"{broken} cell(s) of the notebook itself failed: see the errors above")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
