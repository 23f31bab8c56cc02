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

async function announce(kernel: Kernel.IKernelConnection): Promise<void> {
  const info = await kernel.info;
  if (info.language_info.name !== 'python' || kernel.isDisposed) {
    return;
  }
  kernel.requestExecute({ code: ANNOUNCE, silent: true, store_history: false }, true);
}

function connect(panel: NotebookPanel, kernel: Kernel.IKernelConnection | null): void {
  if (!kernel) {
    return;
  }
  kernel.registerCommTarget(COMM_TARGET, (_comm, msg) => onCommOpen(panel, msg));
  void announce(kernel).catch(() => undefined);
}

function watch(panel: NotebookPanel, context: ISessionContext): void {
  connect(panel, context.session?.kernel ?? null);
  context.kernelChanged.connect((_, change) => connect(panel, change.newValue));
  // A restart keeps the connection but starts a new process: announce again.
  let restarting = false;
  context.statusChanged.connect((_, status) => {
    if (status === 'restarting' || status === 'autorestarting') {
      restarting = true;
    } else if (restarting && status === 'idle') {
      restarting = false;
      const kernel = context.session?.kernel;
      if (kernel) {
        void announce(kernel).catch(() => undefined);
      }
    }
  });
}

/** Link every notebook's kernel, now and later. */
export function connectNotebooks(tracker: INotebookTracker): void {
  tracker.forEach(panel => watch(panel, panel.sessionContext));
  tracker.widgetAdded.connect((_, panel) => watch(panel, panel.sessionContext));
}
