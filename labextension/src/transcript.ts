/**
 * What the panel shows, built from the server's messages: live ones as a run
 * streams, and the same messages again from a notebook's history when a page
 * is reloaded.  No DOM, no notebook: only ``Entry`` lists.
 */
import { CELL_ID, isPlainObject, parseTokens } from './parse';
import { Entry, IOtherResult, IShownFigure, ServerMessage } from './tokens';

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

/**
 * The run's answer in words as the server settled it (``done.answer``), before its last line: the
 * streamed reply becomes the answer given (code dropped, numbers no output showed flagged, "not
 * sure" said); one said before the check of a result the vote did not keep goes; and an answer no
 * model call wrote (the output stated it in the form the request asked) is shown as one.
 */
export function settleAnswer(entries: Entry[], answer: unknown): void {
  const text = typeof answer === 'string' ? answer.trim() : '';
  // Its words without the notes the run added under them (a number not in the output, "not sure").
  const words = text.split('\n\n⚠')[0].trim();
  let kept = false;
  // A reply of this run already holds it: an answer in words without code, a last step's, a replayed one.
  let said = false;
  for (let i = entries.length - 1; i >= 0 && entries[i].kind !== 'user'; i--) {
    const entry = entries[i];
    if (entry.kind !== 'model') {
      continue;
    }
    if (entry.purpose !== 'answer') {
      said = said || (words !== '' && entry.text.includes(words));
    } else if (text && !kept) {
      entry.text = text;
      kept = true;
    } else {
      entries.splice(i, 1);
    }
  }
  if (text && !kept && !said) {
    entries.push({ kind: 'model', text, purpose: 'answer' });
  }
}

/** The end of a run: its last line, with this request's tokens. */
export function finish(
  entries: Entry[],
  status: string,
  message: unknown,
  tokens?: unknown,
  replayed?: { request: string; path: string; live: boolean },
  consensus?: unknown,
  asked?: { request: string; path: string; cells?: string[] },
  undo?: unknown
): void {
  dropWaiting(entries); // a run stopped or lost while it waited: the wait is over too
  // A model call of this run that never answered: a stopped one (last), or a failed answer in
  // words that a note follows (found in review: its "…" stayed for good).
  for (let i = entries.length - 1; i >= 0 && entries[i].kind !== 'user'; i--) {
    const entry = entries[i];
    if (entry.kind === 'model' && !entry.text) {
      entries.splice(i, 1);
    }
  }
  for (const entry of entries) {
    if (entry.kind === 'code' && entry.status === 'running') {
      entry.status = 'stopped'; // its run ended before the cell did
    } else if (entry.kind === 'fix' && !entry.decision) {
      entry.decision = 'ended'; // the server rolled it back
    } else if (entry.kind === 'approval' && !entry.decision) {
      // Stopped while it waited: its buttons answered nothing yet said "approved" (found by hand).
      entry.decision = 'ended';
    }
  }
  const text = typeof message === 'string' ? message : String(message ?? '');
  if (status === 'error') {
    entries.push({ kind: 'error', text });
    return;
  }
  const used = parseTokens(tokens);
  const others = otherResults(consensus);
  entries.push({
    kind: 'done',
    text,
    status: String(status),
    ...(used && used.prompt + used.completion > 0 ? { tokens: used } : {}),
    ...(replayed ? { replayed } : {}),
    ...(others.length > 0 && asked ? { others, asked } : {}),
    ...(isPlainObject(consensus) && consensus.sure === false ? { unsure: true } : {}),
    ...(typeof undo === 'string' && REQUEST_ID.test(undo) ? { undo } : {})
  });
}

/** The id of a request the server's undo names (``FrontendExecutor.request``). */
export const REQUEST_ID = /^[0-9a-f]{12}$/;

/**
 * An Undo's line: after the chat's last entry (a refusal as an error); once it worked, the done
 * entry of the undone request offers Undo no more.  The cells it names, checked, to take out.
 */
export function undone(entries: Entry[], msg: Extract<ServerMessage, { type: 'undone' }>): string[] {
  const text = String(msg.message ?? '');
  if (msg.ok !== true) {
    entries.push({ kind: 'error', text });
    return [];
  }
  for (const entry of entries) {
    if (entry.kind === 'done' && entry.undo !== undefined && entry.undo === msg.request) {
      entry.undone = true;
    }
  }
  entries.push({ kind: 'done', text, status: 'undone' });
  const cells = Array.isArray(msg.cells) ? msg.cells : [];
  return cells.filter((c): c is string => typeof c === 'string' && CELL_ID.test(c));
}

/** The results the vote did not apply, from the done message's ``consensus`` (untrusted). */
function otherResults(consensus: unknown): IOtherResult[] {
  const groups = isPlainObject(consensus) && Array.isArray(consensus.groups) ? consensus.groups.slice(1) : [];
  return groups.flatMap(g =>
    isPlainObject(g) && Array.isArray(g.candidates) && typeof g.candidates[0] === 'number'
      ? [
          {
            candidate: g.candidates[0] as number,
            shown: String(g.shown ?? ''),
            count: g.candidates.length,
            code: Array.isArray(g.code) ? g.code.map(String).join('\n\n') : ''
          }
        ]
      : []
  );
}

/**
 * A notebook's conversation from the server's ``history`` message (untrusted: anything that
 * is not what the server sends is skipped), and the session usage its last run reported.
 */
export function fromHistory(runs: unknown, path: string): { entries: Entry[]; session: unknown } {
  const entries: Entry[] = [];
  let session: unknown = null;
  for (const run of Array.isArray(runs) ? runs : []) {
    if (!isPlainObject(run) || typeof run.request !== 'string' || !Array.isArray(run.messages)) {
      continue;
    }
    entries.push({ kind: 'user', text: run.request });
    let ended = false;
    for (const msg of run.messages) {
      if (!isPlainObject(msg)) {
        continue;
      }
      const m = msg as unknown as ServerMessage;
      if (m.type === 'done') {
        settleAnswer(entries, m.answer);
        // A reloaded panel keeps "use this one": the server still holds the vote.
        finish(entries, String(m.status), m.message, m.tokens, undefined, m.consensus, {
          request: run.request,
          path
        }, m.undo);
        session = m.session ?? session;
        ended = true;
      } else if (m.type === 'undone') {
        undone(entries, m); // its cells went when it was done
      } else {
        show(entries, m, path);
      }
    }
    if (!ended) {
      finish(entries, 'stopped', 'Stopped (the page was closed during the request).');
    }
  }
  return { entries, session };
}

/** Remove the line that said this run waits for the local model (``show``). */
function dropWaiting(entries: Entry[]): void {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i];
    if (entry.kind === 'notice' && entry.waiting) {
      entries.splice(i, 1);
    }
  }
}
