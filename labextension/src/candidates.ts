/**
 * "Use this one" under a %%ask cell whose candidates disagreed: a button per other result.
 *
 * The magic's progress display names the other results in its metadata
 * (``jupyter_ai_ci.others``: ``drivers/magic_view.py``).  A click runs the same cell again
 * as ``%%ask --use N``, in the cell's own output area and with its id, as Run would: the
 * kernel applies candidate N's code with no model call, and its cells take the place of the
 * applied ones (``run/choose.py``).  The cell's source is not changed.
 */
import { CodeCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { JSONObject } from '@lumino/coreutils';

import { keepBar, runInCell } from './cellbar';
import { button, watchCodeCells } from './fix';

const BAR = 'jp-aici-usebar';

interface IOther {
  candidate: number;
  shown: string;
  count: number;
}

/** The other results the cell's %%ask display names (none for any other cell), and whether
 * the run is sure of the one it applied (a person chose it). */
function othersOf(cell: CodeCell): { others: IOther[]; sure: boolean } {
  for (const out of cell.model.outputs.toJSON() as JSONObject[]) {
    const meta = (out.metadata as JSONObject | undefined)?.jupyter_ai_ci as JSONObject | undefined;
    if (meta && Array.isArray(meta.others)) {
      const others = (meta.others as JSONObject[])
        .filter(o => typeof o.candidate === 'number')
        .map(o => ({ candidate: o.candidate as number, shown: String(o.shown ?? ''), count: Number(o.count ?? 1) }));
      return { others, sure: meta.sure === true };
    }
  }
  return { others: [], sure: false };
}

/** The cell again, as ``%%ask --use N`` with its own request, in its own output area. */
async function use(panel: NotebookPanel, cell: CodeCell, candidate: number): Promise<void> {
  const source = cell.model.sharedModel.getSource();
  if (source.startsWith('%%ask')) {
    await runInCell(panel, cell, `%%ask --use ${candidate}\n${source.split('\n').slice(1).join('\n')}`);
  }
}

function fit(panel: NotebookPanel, cell: CodeCell): void {
  keepBar(cell, BAR, () => {
    const { others, sure } = othersOf(cell);
    if (others.length === 0) {
      return [];
    }
    const label = document.createElement('span');
    label.className = 'jp-aici-uselabel';
    label.textContent = sure ? 'Other results:' : 'Not sure — other results:';
    return [
      label,
      ...others.map(o => {
        const title = `Use candidate ${o.candidate}'s result (${o.count} of the candidates): its code runs once, no model call, and replaces the generated cells`;
        return button(`Use ${o.shown}`, title, () => void use(panel, cell, o.candidate), 'use');
      })
    ];
  });
}

/** Give every %%ask cell whose candidates disagreed its "use this one" buttons. */
export function watchCandidates(tracker: INotebookTracker): void {
  watchCodeCells(tracker, fit);
}
