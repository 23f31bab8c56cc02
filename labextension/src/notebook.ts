/**
 * The sidebar's view of the shell's notebooks (``INotebookBridge``): the active one, the cells
 * and figures a chat entry points at, waiting for a kernel, and the run target a request is
 * pinned to (``target.ts``).  The cell edits themselves are in ``cells.ts``, shared with the
 * ``%%ask`` comm.
 */
import { CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { JSONObject } from '@lumino/coreutils';

import { deleteGeneratedCells } from './cells';
import { PanelTarget } from './target';
import { INotebookBridge, IRunTarget } from './tokens';

/** How long a request waits for a notebook that is still finding its kernel before it is refused. */
const SETTLE_MS = 15_000;

/** The index of the cell with ``cellId`` in ``panel``, or -1. */
function indexOf(panel: NotebookPanel, cellId: string): number {
  return panel.content.widgets.findIndex(w => w.model.id === cellId);
}

/** The first PNG or JPEG a cell's outputs hold (output ``output`` only, when given), as a data URL. */
function cellImage(panel: NotebookPanel, cellId: string, output?: number): string | null {
  const cell = panel.content.widgets[indexOf(panel, cellId)];
  if (!cell || cell.model.type !== 'code') {
    return null;
  }
  const outputs = (cell as CodeCell).model.outputs.toJSON() as JSONObject[];
  for (const out of output === undefined ? outputs : outputs.slice(output, output + 1)) {
    const data = (out.data ?? {}) as JSONObject;
    for (const mime of ['image/png', 'image/jpeg']) {
      const value = data[mime];
      const b64 = Array.isArray(value) ? value.join('') : value;
      if (typeof b64 === 'string' && /^[A-Za-z0-9+/=\s]+$/.test(b64)) {
        return `data:${mime};base64,${b64.replace(/\s/g, '')}`;
      }
    }
  }
  return null;
}

/** The active notebook of the JupyterLab shell. */
export class TrackerBridge implements INotebookBridge {
  constructor(
    private readonly tracker: INotebookTracker,
    private readonly shell?: { activateById(id: string): void }
  ) {}

  activeName(): string | null {
    const panel = this.tracker.currentWidget;
    return panel ? panel.title.label || panel.context.path : null;
  }

  activePath(): string | null {
    return this.tracker.currentWidget?.context.path ?? null;
  }

  figure(path: string, cellId: string, output?: number): string | null {
    const panel = this._open(path);
    return panel ? cellImage(panel, cellId, output) : null;
  }

  holds(path: string, cellId: string): boolean | null {
    const panel = this._open(path);
    return panel ? indexOf(panel, cellId) >= 0 : null;
  }

  deleteGenerated(path: string, cellIds: readonly string[]): number {
    const panel = this._open(path);
    return panel && !panel.isDisposed ? deleteGeneratedCells(panel, [...cellIds]) : 0;
  }

  reveal(path: string, cellId: string): boolean {
    const panel = this._open(path);
    const index = panel ? indexOf(panel, cellId) : -1;
    if (!panel || index < 0) {
      return false;
    }
    this.shell?.activateById(panel.id);
    panel.content.activeCellIndex = index;
    panel.content.deselectAll();
    void panel.content.scrollToItem(index, 'center');
    return true;
  }

  private _open(path: string): NotebookPanel | null {
    return this.tracker.find(p => p.context.path === path) ?? null;
  }

  settle(path?: string): Promise<void> | null {
    const panel = path === undefined ? this.tracker.currentWidget : this._open(path);
    const context = panel?.sessionContext;
    // Ready with no session: the person chose no kernel, and hearing so at once is right.
    if (!context || context.isDisposed || context.session?.kernel || (context.isReady && !context.session)) {
      return null;
    }
    return new Promise<void>(resolve => {
      let late = false;
      const done = (): void => {
        // Found its kernel; or ready with none (the person chose no kernel meanwhile): said at once.
        if (context.session?.kernel || context.isDisposed || late || (context.isReady && !context.session)) {
          context.kernelChanged.disconnect(done);
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        late = true;
        done();
      }, SETTLE_MS);
      context.kernelChanged.connect(done);
      void context.ready.then(done, done);
    });
  }

  target(path?: string): IRunTarget | string {
    const panel =
      path === undefined
        ? this.tracker.currentWidget
        : this.tracker.find(p => p.context.path === path) ?? null;
    if (!panel) {
      return path === undefined
        ? 'Open a notebook first: requests work on the active notebook.'
        : `${path} is not open any more; open it and try again.`;
    }
    if (!panel.sessionContext.session?.kernel) {
      return `${panel.title.label} has no kernel; start one first.`;
    }
    return new PanelTarget(panel);
  }
}
