/**
 * Undo on the status line of a ``%%ask`` cell whose request the kernel keeps a way back for.
 *
 * The magic's display names the request in its metadata (``jupyter_ai_ci.undo``:
 * ``drivers/magic_view.py``).  A click runs ``%ask undo ID`` in the cell's own output area, as
 * Run would: the kernel takes its names, process and files back to before the request, the
 * cells it inserted are taken out (over the comm), and the line says what was undone -- or why
 * not (a later cell of yours changed what it made; a newer request came after it).
 */
import { CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { JSONObject } from '@lumino/coreutils';

import { keepBar, runInCell } from './cellbar';
import { button, watchCodeCells } from './fix';
import { REQUEST_ID } from './runend';

const BAR = 'jp-aici-undobar';

/** The id of the request the cell's %%ask display keeps a way back for, or null. */
function undoOf(cell: CodeCell): string | null {
  for (const out of cell.model.outputs.toJSON() as JSONObject[]) {
    const meta = (out.metadata as JSONObject | undefined)?.jupyter_ai_ci as JSONObject | undefined;
    if (meta && typeof meta.undo === 'string' && REQUEST_ID.test(meta.undo)) {
      return meta.undo;
    }
  }
  return null;
}

async function undo(panel: NotebookPanel, cell: CodeCell, id: string): Promise<void> {
  // After a restart the magic may not be loaded yet: loaded first (quietly), so the line that
  // says there is nothing to undo is the kernel's, not an unknown-magic error.  The line replaces
  // the status, as a run of the cell would.
  const code =
    "if 'ask' not in get_ipython().magics_manager.magics['line']:\n" +
    "    get_ipython().run_line_magic('load_ext', 'jupyter_ai_ci')\n" +
    `get_ipython().run_line_magic('ask', 'undo ${id}')\n`;
  await runInCell(panel, cell, code);
}

function fit(panel: NotebookPanel, cell: CodeCell): void {
  keepBar(cell, BAR, () => {
    const id = undoOf(cell);
    if (id === null) {
      return [];
    }
    const title =
      "Undo this request: the kernel's variables, environment and files go back to before it, " +
      'and the cells it inserted are taken out (%ask undo)';
    return [button('Undo', title, () => void undo(panel, cell, id), 'undo')];
  });
}

/** Give every %%ask cell whose request can be undone its Undo button. */
export function watchUndo(tracker: INotebookTracker): void {
  watchCodeCells(tracker, fit);
}
