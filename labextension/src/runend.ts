/**
 * How a run ends in the panel's ``Entry`` list: the answer in words the server settled, the last
 * line (its tokens, the results the vote did not apply, Undo), and an Undo's own line.
 * Apart from ``transcript.ts`` (the lines a run streams): a run ends once, live or from history,
 * and ``undo.ts`` reads the request ids it checks.
 */
import { CELL_ID, isPlainObject, parseTokens } from './parse';
import { Entry, IOtherResult, ServerMessage } from './tokens';
import { dropWaiting } from './transcript';

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
