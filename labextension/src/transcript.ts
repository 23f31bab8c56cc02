/**
 * What the panel shows, built from the server's messages: live ones as a run
 * streams, and the same messages again from a notebook's history when a page
 * is reloaded.  No DOM, no notebook: only ``Entry`` lists.
 *
 * This module shows a run's messages as they stream; ``runend.ts`` writes how a run ends, and
 * ``history.ts`` rebuilds a reloaded notebook's chat from both.
 */
import { CELL_ID, isPlainObject } from './parse';
import { Entry, IShownFigure, ServerMessage } from './tokens';

/** Of a figure's words, at most this much is kept (the server's are a few hundred tokens). */
const SHOWN_TEXT = 4000;

/** Apply one message that only changes what is shown; false for messages it does not show. */
export function show(entries: Entry[], msg: ServerMessage, path: string): boolean {
  const waiting = msg.type === 'notice' && msg.kind === 'waiting';
  if (msg.type !== 'notice') {
    // The reply streaming, code running, the end: the wait is over and its line goes.  (A notice
    // may come during the wait: the local model's first-use line, said as its server starts.)
    dropWaiting(entries);
  }
  switch (msg.type) {
    case 'model':
      entries.push({ kind: 'model', text: '', purpose: String(msg.purpose) });
      return true;
    case 'text': {
      // The reply streaming now belongs to the model call begun last, even when a notice came
      // in between (the local model's first-use line arrives once its server has started).
      for (let i = entries.length - 1; i >= 0; i--) {
        const entry = entries[i];
        if (entry.kind === 'user') {
          break; // this run's request: text never goes to an earlier run's reply
        }
        if (entry.kind === 'model') {
          entry.text += String(msg.text);
          break;
        }
      }
      return true;
    }
    case 'notice':
      if (waiting) {
        // "waiting for the local model: 1 request ahead": one line while it holds, its count
        // updated in place, gone once anything else arrives (not a lasting line per change).
        dropWaiting(entries);
        if (msg.text) {
          // (No text: the wait is over, the request is being read.)
          entries.push({ kind: 'notice', text: String(msg.text), waiting: true });
        }
        return true;
      }
      if (msg.kind === 'replayed-text' || msg.kind === 'candidate-text') {
        // The recorded reply, or another choice of the last reply (candidates asked for in one
        // request), where the model's would have streamed: rendered like one.
        const purpose = msg.kind === 'replayed-text' ? 'replayed' : 'candidate';
        entries.push({ kind: 'model', text: String(msg.text), purpose });
        return true;
      }
      if (msg.kind === 'retrying' || (msg.kind === 'install' && /^(attempt|candidate) \d+/.test(String(msg.text)))) {
        // Fixed by the model, or mended by the run with no model call (core/mends.py).
        failedCheck(entries, Number(msg.attempt) || 0, String(msg.text));
      }
      if (msg.kind === 'candidate') {
        // The first candidate is no longer "checking…" once another is in (as the magic's view).
        for (let i = entries.length - 1; i >= 0 && entries[i].kind !== 'user'; i--) {
          const entry = entries[i]; // this run's alone
          if (entry.kind === 'notice' && entry.text.endsWith(' — checking…')) {
            entry.text = entry.text.slice(0, -' — checking…'.length);
          }
        }
      }
      // A refusal ends the run, and so does a reply without code: the last line says it, once.
      if (msg.kind !== 'attempt' && msg.kind !== 'refused' && msg.kind !== 'no-code') {
        entries.push({ kind: 'notice', text: String(msg.text) });
      }
      return true;
    case 'running':
      entries.push({
        kind: 'code',
        code: String(msg.code),
        attempt: Number(msg.attempt) || 0,
        status: 'running',
        ...(msg.scratch === true ? { tried: true } : {})
      });
      return true;
    case 'ran':
      for (let i = entries.length - 1; i >= 0; i--) {
        const entry = entries[i];
        if (entry.kind === 'code' && entry.status === 'running') {
          entry.status = msg.ok ? 'ok' : 'error';
          entry.error = typeof msg.error === 'string' ? msg.error : undefined;
          if (typeof msg.cell_id === 'string' && CELL_ID.test(msg.cell_id)) {
            entry.cellId = msg.cell_id;
            entry.figure = msg.figure === true;
            entry.path = path;
          }
          break;
        }
      }
      return true;
    case 'figures':
      shownFigures(entries, msg);
      return true;
    case 'approve':
      entries.push({
        kind: 'approval',
        id: String(msg.id),
        code: String(msg.code),
        reason: String(msg.reason),
        pictures: msg.kind === 'pictures'
      });
      return true;
    case 'fix':
      entries.push({
        kind: 'fix',
        id: String(msg.id),
        cellId: String(msg.cell_id),
        path,
        diff: String(msg.diff),
        after: String(msg.after),
        outputs: Array.isArray(msg.outputs) ? msg.outputs : [],
        ran: String(msg.ran),
        metadata: isPlainObject(msg.metadata) ? msg.metadata : {}
      });
      return true;
    case 'decided':
      for (const entry of entries) {
        if (entry.kind === 'approval' && entry.id === msg.id && !entry.decision) {
          entry.decision = msg.approved ? 'approved' : 'rejected';
        }
      }
      return true;
    default:
      return false;
  }
}

/**
 * An attempt retried although its cells ran (a chart that contradicts the request,
 * ``core/chartcheck.py``; a change pandas made on a copy, ``core/noop.py``): its last cell read
 * "✓ cell ran" above the line saying it failed.
 */
function failedCheck(entries: Entry[], attempt: number, notice: string): void {
  for (let i = entries.length - 1; i >= 0 && entries[i].kind !== 'user'; i--) {
    const entry = entries[i];
    if (entry.kind === 'code' && entry.attempt === attempt) {
      if (entry.status === 'ok') {
        entry.status = 'error';
        entry.failedCheck = true;
        entry.error = /failed: (.*?) — (?:asking|added|wrote) /.exec(notice)?.[1];
      }
      return;
    }
  }
}

/**
 * What a model request was told of an attempt's figures, put with the code entries of this run
 * that ran them: the cell named, else (a cell-less attempt) the attempt's last code entry.
 */
function shownFigures(entries: Entry[], msg: Extract<ServerMessage, { type: 'figures' }>): void {
  const attempt = Number(msg.attempt) || 0;
  for (const f of Array.isArray(msg.figures) ? msg.figures : []) {
    if (!isPlainObject(f) || (typeof f.text !== 'string' && f.picture !== true)) {
      continue;
    }
    const cellId = typeof f.cell_id === 'string' && CELL_ID.test(f.cell_id) ? f.cell_id : null;
    let owner: Extract<Entry, { kind: 'code' }> | null = null;
    for (let i = entries.length - 1; i >= 0 && entries[i].kind !== 'user'; i--) {
      const entry = entries[i];
      if (entry.kind === 'code' && (cellId ? entry.cellId === cellId : entry.attempt === attempt)) {
        owner = entry;
        break;
      }
    }
    if (owner) {
      const figure: IShownFigure = {
        text: typeof f.text === 'string' ? f.text.slice(0, SHOWN_TEXT) : '',
        picture: f.picture === true,
        output: typeof f.output === 'number' && Number.isInteger(f.output) && f.output >= 0 ? f.output : 0
      };
      owner.shown = [...(owner.shown ?? []), figure];
    }
  }
}

/** Remove the line that said this run waits for the local model (``show``). */
export function dropWaiting(entries: Entry[]): void {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i];
    if (entry.kind === 'notice' && entry.waiting) {
      entries.splice(i, 1);
    }
  }
}
