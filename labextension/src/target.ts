/**
 * The notebook a request was sent from, pinned for its run (``IRunTarget``): the cells sent as
 * context, the cells the server asks to run, and the run's own cells (provenance, taken out
 * when stopped or replaced).  Apart from ``notebook.ts``, which only finds notebooks, because
 * a run's state (its cells, its attempt, whether it was stopped) lives here.
 */
import { CodeCell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { JSONExt, JSONObject } from '@lumino/coreutils';

import { cellIds, deleteCells, insertCodeCells } from './cells';
import { applyFix, failedCell, runScratch } from './fix';
import { ICellContext, IExecuted, IExecuteRequest, IFailedCell, IRunTarget, METADATA_KEY } from './tokens';

const CONTEXT_CELLS = 20;
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

export class PanelTarget implements IRunTarget {
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
