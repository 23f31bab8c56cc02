/**
 * What the bars under a ``%%ask`` cell share ("use this one", Undo): a bar kept in step with the
 * cell's outputs, and a run of the kernel whose outputs replace the cell's, as Run would.
 */
import { CodeCell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { KernelMessage } from '@jupyterlab/services';

/** Run ``code`` in the cell's own output area (its outputs replace the cell's); false without a kernel. */
export async function runInCell(panel: NotebookPanel, cell: CodeCell, code: string): Promise<boolean> {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) {
    return false;
  }
  const future = kernel.requestExecute({ code, store_history: false }, false, { cellId: cell.model.id });
  cell.outputArea.future = future;
  const reply = (await future.done) as KernelMessage.IExecuteReplyMsg;
  if (reply.content.status === 'ok' && typeof reply.content.execution_count === 'number') {
    cell.model.executionCount = reply.content.execution_count;
  }
  return true;
}

/** A bar of class ``cls`` under the cell, made anew by ``build`` whenever its outputs change
 * (none when ``build`` gives nothing). */
export function keepBar(cell: CodeCell, cls: string, build: () => HTMLElement[]): void {
  const update = () => {
    cell.node.querySelector(`:scope > .${cls}`)?.remove();
    const parts = cell.isDisposed ? [] : build();
    if (parts.length === 0) {
      return;
    }
    const host = document.createElement('div');
    host.className = cls;
    host.append(...parts);
    cell.node.appendChild(host);
  };
  cell.model.outputs.changed.connect(update);
  update();
}
