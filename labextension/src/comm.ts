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

import { insertAskResults } from './notebook';
import { COMM_TARGET, PROTOCOL } from './tokens';

const MARKER = 'jupyter_ai_ci_frontend';
const ANNOUNCE = `try:
    get_ipython().${MARKER} = {"protocol": ${PROTOCOL}, "frontend": "jupyterlab"}
except Exception:
    pass
`;

function onCommOpen(panel: NotebookPanel, msg: KernelMessage.ICommOpenMsg): void {
  const data = msg.content.data as JSONObject;
  if (data.type === 'insert' && data.protocol === PROTOCOL) {
    const cells = (data.cells ?? []) as any[];
    insertAskResults(panel, (data.ask_cell_id as string) ?? null, cells);
  }
}

function mark(kernel: Kernel.IKernelConnection): void {
  if (!kernel.isDisposed && kernel.status !== 'dead') {
    kernel.requestExecute({ code: ANNOUNCE, silent: true, store_history: false }, true);
  }
}

async function announce(kernel: Kernel.IKernelConnection): Promise<boolean> {
  const info = await kernel.info;
  const python = info.language_info.name === 'python';
  if (python) {
    mark(kernel);
  }
  return python;
}

function watch(panel: NotebookPanel, context: ISessionContext): void {
  let python = false;
  const connect = (kernel: Kernel.IKernelConnection | null) => {
    if (kernel) {
      kernel.registerCommTarget(COMM_TARGET, (_comm, msg) => onCommOpen(panel, msg));
      python = false;
      void announce(kernel).then(
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
      void Promise.resolve().then(() => mark(kernel));
    } else if (restarting && status === 'idle') {
      restarting = false;
      mark(kernel);
    }
  });
}

/** Link every notebook's kernel, now and later. */
export function connectNotebooks(tracker: INotebookTracker): void {
  tracker.forEach(panel => watch(panel, panel.sessionContext));
  tracker.widgetAdded.connect((_, panel) => watch(panel, panel.sessionContext));
}
