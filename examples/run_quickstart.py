"""Execute examples/quickstart.ipynb end to end, headless (nbclient), against the
configured endpoint; save examples/quickstart.out.ipynb and print what each
cell showed.  Exit status 0 when every cell ran."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = Path(__file__).parent


def show(nb: nbformat.NotebookNode) -> None:
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        print(f"\n\033[1mIn: {cell.source.splitlines()[0] if cell.source else ''}\033[0m")
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                sys.stdout.write(out.text)
            elif out.output_type == "error":
                print("\n".join(out.traceback))
            else:
                data = out.get("data", {})
                extra = " [image]" if "image/png" in data else ""
                print(str(data.get("text/plain", "")) + extra)


def main() -> int:
    source = HERE / "quickstart.ipynb"
    target = HERE / "quickstart.out.ipynb"
    nb = nbformat.read(source, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE)}})
    status = 0
    try:
        client.execute()
    except CellExecutionError:
        status = 1
    nbformat.write(nb, target)
    show(nb)
    print(f"\nsaved {target}" + ("" if status == 0 else " — a cell failed; its one-line error is above"))
    return status


if __name__ == "__main__":
    sys.exit(main())
