/**
 * Cell operations on a notebook: insert, run, read outputs.  Used by the
 * sidebar (through ``IRunTarget``) and by the ``%%ask`` comm.
 */
import { CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { JSONExt, JSONObject } from '@lumino/coreutils';

import { applyFix, failedCell, runScratch } from './fix';
import { ICommCell, isPlainObject } from './parse';
import {
  ICellContext,
  IExecuted,
  IExecuteRequest,
  IFailedCell,
  INotebookBridge,
  IRunTarget,
  METADATA_KEY
} from './tokens';

const CONTEXT_CELLS = 20;
/** How long a request waits for a notebook that is still finding its kernel before it is refused. */
const SETTLE_MS = 15_000;
// Of each end of a cell's source or output sent with a request.  The server reads at most 3,600
// characters from each end (context/build.py keeps 600 of output, 1,200 of source, masked before
// the cut: privacy.py masked_cut reads three times that), so this cut is never inside what it
// keeps; and 20 cells stay under the message's room even at 6 bytes a character (an escaped
// control character).  Found by hand: a cell that printed megabytes made every request fail.
const CELL_END_CHARS = 4000;

/** ``text`` whole, or its head and tail with how much was cut between them. */
export function headTail(text: string, end: number = CELL_END_CHARS): string {
  if (text.length <= 2 * end + 100) {
    return text;
  }
  const cut = text.length - 2 * end;
  return `${text.slice(0, end)}\n… ${cut} characters cut …\n${text.slice(-end)}`;
}

/** A text stand-in for a cell's outputs, as the model's context. */
function outputText(outputs: JSONObject[]): string {
  const parts: string[] = [];
  for (const out of outputs) {
    const data = (out.data ?? {}) as JSONObject;
    const join = (v: unknown) => (Array.isArray(v) ? v.join('') : String(v ?? ''));
    if (out.output_type === 'stream') {
      parts.push(join(out.text));
    } else if (out.output_type === 'error') {
      parts.push(`${out.ename}: ${out.evalue}`);
    } else if ('text/plain' in data) {
      parts.push(join(data['text/plain']));
    }
  }
  return parts.join('\n');
}

function cellIds(panel: NotebookPanel): string[] {
  const model = panel.content.model;
  return model ? model.sharedModel.cells.map(c => c.getId()) : [];
}

/** Insert code cells at ``index``; return their widgets' ids. */
export function insertCodeCells(
  panel: NotebookPanel,
  index: number,
  cells: { source: string; metadata: JSONObject; outputs?: JSONObject[]; id?: string; execution_count?: number }[]
): void {
  const shared = panel.content.model!.sharedModel;
  shared.insertCells(
    index,
    cells.map(c => ({
      // The kernel picks the ids of the cells %%ask generates: it knows them when they run.
      ...(typeof c.id === 'string' ? { id: c.id } : {}),
      cell_type: 'code',
      source: c.source,
      metadata: c.metadata,
      outputs: (c.outputs ?? []) as any,
      execution_count: c.execution_count ?? null
    }))
  );
}

/** ``%%ask`` results: replace earlier results of the same ask cell (wherever they
 * were moved), insert below it -- or, ``atEnd`` (an MCP tool's cells), after the last cell.
 * ``cells`` come from the kernel's comm, checked by ``parseCommCells``; they are inserted
 * untrusted, whatever the kernel says. */
export function insertAskResults(
  panel: NotebookPanel,
  askCellId: string | null,
  cells: ICommCell[],
  atEnd = false
): boolean {
  const model = panel.content.model;
  if (!model) {
    return false;
  }
  const shared = model.sharedModel;
  if (askCellId) {
    // Re-running an %%ask cell replaces what it inserted last time, not piles up.
    for (let i = shared.cells.length - 1; i >= 0; i--) {
      const meta = shared.cells[i].getMetadata(METADATA_KEY) as JSONObject | undefined;
      if (meta && meta.ask_cell_id === askCellId && shared.cells[i].getId() !== askCellId) {
        shared.deleteCell(i);
      }
    }
  }
  const at = atEnd
    ? shared.cells.length - 1
    : askCellId
      ? cellIds(panel).indexOf(askCellId)
      : panel.content.activeCellIndex;
  if (at < 0 && !atEnd) {
    return false;
  }
  insertCodeCells(panel, at + 1, cells);
  for (const cell of panel.content.widgets.slice(at + 1, at + 1 + cells.length)) {
    // Outputs the user did not see run here: HTML is sanitized, scripts and SVG not run.
    cell.model.trusted = false;
  }
  return true;
}

/** ``%ask undo``: take out the cells an undone request inserted.  Only cells that carry our
 * provenance go, whatever the comm (which anything in the kernel can open) names: a person's
 * own cells are never deleted this way.  How many went. */
export function deleteGeneratedCells(panel: NotebookPanel, ids: string[]): number {
  const shared = panel.content.model?.sharedModel;
  if (!shared || ids.length === 0) {
    return 0;
  }
  const wanted = new Set(ids);
  return deleteCells(shared, cell => wanted.has(cell.getId()) && isPlainObject(cell.getMetadata(METADATA_KEY)));
}

/** Which generated cells the notebook holds, per ``%%ask`` cell, and for which request:
 * what the kernel needs to run each generated step once (``notebook/once.py``). */
export function generatedLayout(panel: NotebookPanel): JSONObject {
  const layout: { [ask: string]: { cells: string[]; request: string } } = {};
  const model = panel.content.model;
  for (const cell of model ? model.sharedModel.cells : []) {
    const meta = cell.getMetadata(METADATA_KEY) as JSONObject | undefined;
    const ask = meta?.ask_cell_id;
    if (cell.cell_type !== 'code' || typeof ask !== 'string') {
      continue;
    }
    const entry = (layout[ask] ??= { cells: [], request: String(meta?.request ?? '') });
    entry.cells.push(cell.getId());
  }
  return layout as unknown as JSONObject;
}

class PanelTarget implements IRunTarget {
  constructor(private readonly panel: NotebookPanel) {
    const nb = panel.content;
    this.name = panel.title.label || panel.context.path;
    this.path = panel.context.path;
    this.kernelId = panel.sessionContext.session?.kernel?.id ?? '';
    this.anchorCellId = nb.activeCell?.model.id ?? null;
    const upto = nb.activeCellIndex >= 0 ? nb.activeCellIndex + 1 : nb.widgets.length;
    this.cells = nb.widgets
      .slice(0, upto)
      .filter(w => w.model.type === 'code')
      .slice(-CONTEXT_CELLS)
      .map(
        (w): ICellContext => ({
          source: headTail(w.model.sharedModel.getSource()),
          output: headTail(outputText((w as CodeCell).model.outputs.toJSON() as JSONObject[]))
        })
      );
  }

  readonly name: string;
  readonly path: string;
  readonly kernelId: string;
  readonly anchorCellId: string | null;
  readonly cells: ICellContext[];

  async execute(req: IExecuteRequest): Promise<IExecuted> {
    const aborted = (reason: string): IExecuted => ({
      type: 'executed',
      id: req.id,
      status: 'aborted',
      reason
    });
    const panel = this.panel;
    if (panel.isDisposed || !panel.content.model) {
      return aborted(`${this.name} was closed during the request`);
    }
    if (req.scratch) {
      return runScratch(panel, req);
    }
    await panel.sessionContext.ready;
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || kernel.status === 'dead') {
      return aborted(`the kernel of ${this.name} is not running; restart it and try again`);
    }
    const nb = panel.content;
    const shared = nb.model!.sharedModel;
    let index: number;
    const doomed = req.replace
      .map(id => cellIds(panel).indexOf(id))
      .filter(i => i >= 0)
      .sort((a, b) => a - b);
    if (doomed.length > 0) {
      // A fix takes the place of the attempt that failed.
      index = doomed[0];
      for (const i of doomed.reverse()) {
        shared.deleteCell(i);
      }
    } else {
      const after = req.after ? cellIds(panel).indexOf(req.after) : -1;
      index = after >= 0 ? after + 1 : nb.activeCellIndex + 1;
    }
    insertCodeCells(panel, index, [{ source: req.code, metadata: req.metadata }]);
    const cell = nb.widgets[index] as CodeCell;
    this._inserted.add(cell.model.id);
    if (req.attempt !== this._attempt) {
      this._attempt = req.attempt;
      this._attemptCells = [];
    }
    this._attemptCells.push(cell.model.id);
    nb.activeCellIndex = index;
    void nb.scrollToItem(index);
    const started = Date.now();
    this._running++;
    // A cell the kernel never finished (it died, restarted, aborted the cell) leaves the notebook
    // with its attempt, as a stopped one does: Run All would run the code that killed it again.
    let ended = false;
    try {
      const reply = await CodeCell.execute(cell, panel.sessionContext);
      if (!reply) {
        ended = true;
        return aborted(`the kernel of ${this.name} is not running`);
      }
      const status = reply.content.status;
      if (status === 'aborted') {
        ended = true;
        return aborted('the kernel aborted the cell (interrupted or restarted)');
      }
      return {
        type: 'executed',
        id: req.id,
        status: status === 'ok' ? 'ok' : 'error',
        cell_id: cell.model.id,
        outputs: cell.model.outputs.toJSON() as JSONObject[],
        seconds: (Date.now() - started) / 1000
      };
    } catch (e) {
      ended = true;
      return aborted(`the cell could not run: the kernel died or restarted (${e})`);
    } finally {
      this._running--;
      if ((this._stopped || ended) && this._running === 0) {
        this._takeOutAttempt();
      }
    }
  }

  failed(cellId: string | null): IFailedCell | null {
    return this.panel.isDisposed ? null : failedCell(this.panel, cellId);
  }

  applyFix(cellId: string, source: string, outputs: JSONObject[], metadata: JSONObject): boolean {
    return !this.panel.isDisposed && applyFix(this.panel, cellId, source, outputs, metadata);
  }

  /** A stopped attempt is undone in the kernel; its cells leave the notebook too, as a
   * stopped ``%%ask`` inserts nothing (Run All would otherwise hang on the cell again). */
  private _takeOutAttempt(): void {
    const model = this.panel.isDisposed ? null : this.panel.content.model;
    const doomed = new Set(this._attemptCells);
    this._attemptCells = [];
    if (model) {
      deleteCells(model.sharedModel, cell => doomed.has(cell.getId()));
    }
  }

  annotate(cellIds: readonly string[], key: string, value: JSONObject): number {
    try {
      const model = this.panel.isDisposed ? null : this.panel.content.model;
      if (!model) {
        return 0;
      }
      // Only cells this run put there: the server may not tag the user's own cells.
      const wanted = new Set(cellIds.filter(id => this._inserted.has(id)));
      let set = 0;
      for (const cell of model.sharedModel.cells) {
        if (wanted.has(cell.getId())) {
          cell.setMetadata(key, JSONExt.deepCopy(value));
          set++;
        }
      }
      return set;
    } catch (e) {
      console.warn('jupyter-ai-ci: could not set the cells\' provenance', e);
      return 0;
    }
  }

  retire(cellIds: readonly string[]): number {
    const model = this.panel.isDisposed ? null : this.panel.content.model;
    if (!model) {
      return 0;
    }
    // Only generated cells: ids from the transcript must never take a user's own cell.
    const doomed = new Set(cellIds);
    return deleteCells(
      model.sharedModel,
      cell => doomed.has(cell.getId()) && cell.getMetadata(METADATA_KEY) !== undefined
    );
  }

  withdraw(): number {
    const model = this.panel.isDisposed ? null : this.panel.content.model;
    return model ? deleteCells(model.sharedModel, cell => this._inserted.has(cell.getId())) : 0;
  }

  /** Interrupt the kernel if a cell of this run is running (an idle kernel is left alone). */
  interrupt(): void {
    if (this._running > 0) {
      this._stopped = true; // its cells are taken out once the interrupted one has ended
      void this.panel.sessionContext.session?.kernel?.interrupt();
    }
  }

  /** Ids of the cells this run inserted (some may be gone since). */
  private readonly _inserted = new Set<string>();
  private _running = 0;
  private _stopped = false;
  private _attempt: number | undefined = undefined;
  private _attemptCells: string[] = [];
}

/** The index of the cell with ``cellId`` in ``panel``, or -1. */
type SharedNotebook = NonNullable<NotebookPanel['content']['model']>['sharedModel'];

/** Delete the cells ``doomed`` picks, last first (indices stay valid); how many went. */
function deleteCells(shared: SharedNotebook, doomed: (cell: SharedNotebook['cells'][number]) => boolean): number {
  let gone = 0;
  for (let i = shared.cells.length - 1; i >= 0; i--) {
    if (doomed(shared.cells[i])) {
      shared.deleteCell(i);
      gone++;
    }
  }
  return gone;
}

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
