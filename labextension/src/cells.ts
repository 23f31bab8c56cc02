/**
 * Edits to a notebook's cells, on its shared model: insert code cells, put a ``%%ask`` cell's
 * results below it, take generated cells out, and list them for the kernel.  Shared by the
 * ``%%ask`` comm (``comm.ts``) and the panel's run target (``target.ts``), so both insert and
 * delete the same way.
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { JSONObject } from '@lumino/coreutils';

import { ICommCell, isPlainObject } from './parse';
import { METADATA_KEY } from './tokens';

export function cellIds(panel: NotebookPanel): string[] {
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

type SharedNotebook = NonNullable<NotebookPanel['content']['model']>['sharedModel'];

/** Delete the cells ``doomed`` picks, last first (indices stay valid); how many went. */
export function deleteCells(shared: SharedNotebook, doomed: (cell: SharedNotebook['cells'][number]) => boolean): number {
  let gone = 0;
  for (let i = shared.cells.length - 1; i >= 0; i--) {
    if (doomed(shared.cells[i])) {
      shared.deleteCell(i);
      gone++;
    }
  }
  return gone;
}
