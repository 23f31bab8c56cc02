/**
 * The frontend end of the kernel link (see ``jupyter_ai_ci/comm.py``).
 *
 * On every kernel a notebook connects to (start, restart, page load) we
 * announce ourselves with a silent execute request that marks the shell, so
 * ``%%ask`` knows it can insert real cells without waiting for a reply -- a
 * reply would sit in the shell queue until the running cells end.  And we
 * insert the cells the kernel sends over the comm below the ``%%ask`` cell.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONObject } from '@lumino/coreutils';

import { deleteGeneratedCells, generatedLayout, insertAskResults } from './cells';
import { CELL_ID, isPlainObject, parseCommCells } from './parse';
import { COMM_TARGET, PROTOCOL } from './tokens';

const MARKER = 'jupyter_ai_ci_frontend';

/** The announcement, with the notebook's generated cells (``notebook/once.py``).  The
 * layout travels as a JSON string literal, which Python reads as a string literal too. */
function announcement(panel: NotebookPanel): string {
  const info = JSON.stringify({ protocol: PROTOCOL, frontend: 'jupyterlab', layout: generatedLayout(panel) });
  return `try:
    get_ipython().${MARKER} = __import__("json").loads(${JSON.stringify(info)})
except Exception:
    pass
`;
}

/** Anything in the kernel can open this comm: only cells as ``%%ask`` sends them are kept
 * (``parseCommCells``), and they are inserted untrusted. */
function onCommOpen(panel: NotebookPanel, msg: KernelMessage.ICommOpenMsg): void {
  const data = msg.content.data as JSONObject;
  if (isPlainObject(data) && data.type === 'insert' && data.protocol === PROTOCOL) {
    const ask = typeof data.ask_cell_id === 'string' && CELL_ID.test(data.ask_cell_id) ? data.ask_cell_id : null;
    // An MCP tool's cells (no %%ask cell to go under) go at the end; any other value is ignored.
    insertAskResults(panel, ask, parseCommCells(data.cells), data.at === 'end');
  } else if (isPlainObject(data) && data.type === 'delete' && data.protocol === PROTOCOL && Array.isArray(data.ids)) {
    // %ask undo: the undone request's cells (only generated ones: deleteGeneratedCells checks).
    const ids = data.ids.filter((id): id is string => typeof id === 'string' && CELL_ID.test(id)).slice(0, 200);
    deleteGeneratedCells(panel, ids);
  }
}

function mark(panel: NotebookPanel, kernel: Kernel.IKernelConnection): void {
  if (!kernel.isDisposed && kernel.status !== 'dead') {
    kernel.requestExecute({ code: announcement(panel), silent: true, store_history: false }, true);
  }
}

async function announce(panel: NotebookPanel, kernel: Kernel.IKernelConnection): Promise<boolean> {
  const info = await kernel.info;
  const python = info.language_info.name === 'python';
  if (python) {
    mark(panel, kernel);
  }
  return python;
}

function watch(panel: NotebookPanel, context: ISessionContext): void {
  let python = false;
  const connect = (kernel: Kernel.IKernelConnection | null) => {
    if (kernel) {
      kernel.registerCommTarget(COMM_TARGET, (_comm, msg) => onCommOpen(panel, msg));
      python = false;
      void announce(panel, kernel).then(
        yes => (python = yes),
        () => undefined
      );
    }
  };
  connect(context.session?.kernel ?? null);
  context.kernelChanged.connect((_, change) => connect(change.newValue));
  // A restart keeps the connection but starts a new process: mark it again.
  // Queued right after the connection clears its state (a microtask later),
  // the mark is sent before anything queued after the restart, such as the
  // cells of "Restart Kernel and Run All".  Marking twice is harmless.
  let restarting = false;
  context.statusChanged.connect((_, status) => {
    const kernel = context.session?.kernel;
    if (!kernel || !python) {
      return;
    }
    if (status === 'restarting' || status === 'autorestarting') {
      restarting = true;
      void Promise.resolve().then(() => mark(panel, kernel));
    } else if (restarting && status === 'idle') {
      restarting = false;
      mark(panel, kernel);
    }
  });
  // Cells added, deleted or moved: tell the kernel before anything queued after the change
  // runs (a later Run All).  Once per burst of changes.
  let pending = false;
  const changed = () => {
    const kernel = context.session?.kernel;
    if (pending || !kernel || !python) {
      return;
    }
    pending = true;
    void Promise.resolve().then(() => {
      pending = false;
      mark(panel, kernel);
    });
  };
  panel.content.modelChanged.connect(() => panel.content.model?.cells.changed.connect(changed));
  panel.content.model?.cells.changed.connect(changed);
}

/** Link every notebook's kernel, now and later. */
export function connectNotebooks(tracker: INotebookTracker): void {
  tracker.forEach(panel => watch(panel, panel.sessionContext));
  tracker.widgetAdded.connect((_, panel) => watch(panel, panel.sessionContext));
}
