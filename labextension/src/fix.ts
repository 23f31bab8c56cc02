/**
 * The Fix / Explain action on a code cell that raised: its buttons under the error
 * output, the failed cell as the server is sent it, a tried attempt run in the kernel
 * without a cell, and an accepted fix put in the cell.  No requests here: the chat
 * model sends them (``model.ts``); the server holds the attempt (``drivers/server/fix.py``).
 */
import { Cell, CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { KernelMessage } from '@jupyterlab/services';
import { JSONObject } from '@lumino/coreutils';

import { IExecuted, IExecuteRequest, IFailedCell } from './tokens';

export type FixKind = 'fix' | 'explain';
/** Called when a cell's Fix or Explain button is clicked. */
export type FixHandler = (kind: FixKind, panel: NotebookPanel, cellId: string) => void;

const BAR = 'jp-aici-fixbar';

function errorOf(cell: Cell): JSONObject | null {
  if (!(cell instanceof CodeCell)) {
    return null;
  }
  const outputs = cell.model.outputs.toJSON() as JSONObject[];
  return outputs.find(o => o.output_type === 'error') ?? null;
}

function findCell(panel: NotebookPanel, cellId: string | null): Cell | null {
  const nb = panel.content;
  if (cellId === null) {
    return nb.activeCell ?? null;
  }
  return nb.widgets.find(w => w.model.id === cellId) ?? null;
}

/** The cell as the Fix action sends it; null when it is not a code cell that raised. */
export function failedCell(panel: NotebookPanel, cellId: string | null): IFailedCell | null {
  const cell = findCell(panel, cellId);
  const error = cell ? errorOf(cell) : null;
  if (!cell || !error) {
    return null;
  }
  const tb = Array.isArray(error.traceback) ? error.traceback.map(String) : [];
  const count = (cell as CodeCell).model.executionCount;
  return {
    cellId: cell.model.id,
    source: cell.model.sharedModel.getSource(),
    count: typeof count === 'number' ? count : null,
    error: { ename: String(error.ename ?? 'Error'), evalue: String(error.evalue ?? ''), traceback: tb }
  };
}

/** Put an accepted fix in its cell; the source change is the notebook's own (one undo away). */
export function applyFix(
  panel: NotebookPanel,
  cellId: string,
  source: string,
  outputs: JSONObject[],
  metadata: JSONObject
): boolean {
  const cell = findCell(panel, cellId);
  if (!(cell instanceof CodeCell)) {
    return false;
  }
  cell.model.sharedModel.setSource(source);
  cell.model.outputs.clear();
  for (const out of outputs) {
    cell.model.outputs.add(out as never); // nbformat output dicts, as the server sent them
  }
  for (const [key, value] of Object.entries(metadata)) {
    cell.model.setMetadata(key, value); // the old source, masked (``jupyter_ai_ci_fix``)
  }
  return true;
}

/** Run a tried fix in the kernel, not in a cell: the notebook changes only on Accept. */
export async function runScratch(panel: NotebookPanel, req: IExecuteRequest): Promise<IExecuted> {
  const aborted = (reason: string): IExecuted => ({ type: 'executed', id: req.id, status: 'aborted', reason });
  await panel.sessionContext.ready;
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel || kernel.status === 'dead') {
    return aborted('the kernel is not running; restart it and try again');
  }
  const outputs: JSONObject[] = [];
  const started = Date.now();
  const future = kernel.requestExecute({ code: req.code, store_history: false, allow_stdin: false });
  future.onIOPub = msg => {
    const type = msg.header.msg_type;
    const c = msg.content as JSONObject;
    if (type === 'stream') {
      outputs.push({ output_type: 'stream', name: c.name, text: c.text } as JSONObject);
    } else if (type === 'execute_result' || type === 'display_data') {
      const out: JSONObject = { output_type: type, data: c.data, metadata: c.metadata ?? {} } as JSONObject;
      if (type === 'execute_result') {
        out.execution_count = (c.execution_count as number) ?? null;
      }
      outputs.push(out);
    } else if (type === 'error') {
      outputs.push({ output_type: 'error', ename: c.ename, evalue: c.evalue, traceback: c.traceback } as JSONObject);
    }
  };
  try {
    const reply = (await future.done) as KernelMessage.IExecuteReplyMsg;
    const status = reply.content.status;
    if (status === 'aborted') {
      return aborted('the kernel aborted the attempt (interrupted or restarted)');
    }
    return {
      type: 'executed',
      id: req.id,
      status: status === 'ok' ? 'ok' : 'error',
      outputs,
      seconds: (Date.now() - started) / 1000
    };
  } catch (e) {
    return aborted(`the attempt could not run: the kernel died or restarted (${e})`);
  }
}

/** A small button for a bar under a cell's outputs; ``kind`` names its class (jp-aici-KIND-action). */
export function button(label: string, title: string, onClick: () => void, kind = label.toLowerCase()): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = `jp-Button jp-mod-styled jp-mod-minimal jp-aici-${kind}-action`;
  b.textContent = label;
  b.title = title;
  b.addEventListener('click', ev => {
    ev.stopPropagation();
    onClick();
  });
  return b;
}

/** Keep a Fix / Explain bar under the outputs of each code cell that holds an error. */
function fit(panel: NotebookPanel, cell: CodeCell, act: FixHandler): void {
  const update = () => {
    const bar = cell.node.querySelector(`:scope > .${BAR}`);
    if (errorOf(cell) && !bar && !cell.isDisposed) {
      const host = document.createElement('div');
      host.className = BAR;
      host.append(
        button('Fix', 'Fix this cell: the fix is tried in the kernel first, then offered as a diff (Alt+Shift+F)', () =>
          act('fix', panel, cell.model.id)
        ),
        button('Explain', 'Explain in words why this cell failed; nothing is run', () =>
          act('explain', panel, cell.model.id)
        )
      );
      cell.node.appendChild(host);
    } else if (!errorOf(cell) && bar) {
      bar.remove();
    }
  };
  cell.model.outputs.changed.connect(update);
  update();
}

/** Give every notebook's failed cells the Fix action, now and later. */
export function watchErrors(tracker: INotebookTracker, act: FixHandler): void {
  watchCodeCells(tracker, (panel, cell) => fit(panel, cell, act));
}

/** Call ``fitCell`` once for every code cell of every notebook, now and later. */
export function watchCodeCells(tracker: INotebookTracker, fitCell: (panel: NotebookPanel, cell: CodeCell) => void): void {
  const seen = new WeakSet<Cell>();
  const fitOnce = (panel: NotebookPanel, cell: Cell) => {
    if (cell instanceof CodeCell && !seen.has(cell)) {
      seen.add(cell);
      fitCell(panel, cell);
    }
  };
  const watch = (panel: NotebookPanel) => {
    const all = () => panel.content.widgets.forEach(cell => fitOnce(panel, cell));
    // Cell widgets are made after the model's change: fitted a frame later.
    const soon = () => requestAnimationFrame(all);
    panel.content.modelChanged.connect(() => {
      panel.content.model?.cells.changed.connect(soon);
      soon();
    });
    panel.content.model?.cells.changed.connect(soon);
    void panel.revealed.then(all);
  };
  tracker.forEach(watch);
  tracker.widgetAdded.connect((_, panel) => watch(panel));
}
