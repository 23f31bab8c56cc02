/**
 * The frontend end of the kernel comm (see ``jupyter_ai_ci/comm.py``): answers
 * the kernel's hello, so ``%%ask`` knows real cells can be inserted, and
 * inserts the cells it sends below the ``%%ask`` cell.
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONObject } from '@lumino/coreutils';

import { insertAskResults } from './notebook';
import { COMM_TARGET, PROTOCOL } from './tokens';

function onCommOpen(
  panel: NotebookPanel,
  comm: Kernel.IComm,
  msg: KernelMessage.ICommOpenMsg
): void {
  const data = msg.content.data as JSONObject;
  if (data.type === 'hello') {
    comm.send({ type: 'hello', protocol: PROTOCOL, frontend: 'jupyterlab' });
  } else if (data.type === 'insert') {
    const cells = (data.cells ?? []) as any[];
    insertAskResults(panel, (data.ask_cell_id as string) ?? null, cells);
  }
}

function register(panel: NotebookPanel, kernel: Kernel.IKernelConnection | null): void {
  // Registered on each kernel connection: a new kernel (or a restart that
  // swaps the connection) needs it again before the extension says hello.
  kernel?.registerCommTarget(COMM_TARGET, (comm, msg) => onCommOpen(panel, comm, msg));
}

/** Listen on the kernel of every notebook, now and later. */
export function connectNotebooks(tracker: INotebookTracker): void {
  tracker.widgetAdded.connect((_, panel) => {
    register(panel, panel.sessionContext.session?.kernel ?? null);
    panel.sessionContext.kernelChanged.connect((_, change) =>
      register(panel, change.newValue)
    );
  });
}
