/**
 * A notebook's earlier conversation for a reloaded page, from the server's ``history`` message.
 * Apart from the live path because it only replays: each recorded message goes through the same
 * code that showed it live (``transcript.ts``, ``runend.ts``), so a reloaded chat reads the same.
 */
import { isPlainObject } from './parse';
import { finish, settleAnswer, undone } from './runend';
import { Entry, ServerMessage } from './tokens';
import { show } from './transcript';

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
