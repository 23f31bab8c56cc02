/**
 * The chat's state and its conversation with the server: no DOM.
 *
 * One websocket per panel.  Each notebook has its own chat, kept by the
 * server: the panel shows the active notebook's (asking the server for its
 * history the first time), and a request continues it.  The server drives a
 * run; this model shows what it says and runs cells when asked, through the
 * notebook target pinned when the request was sent.
 *
 * ``ChatModel`` is built in three layers, one job each: ``state.ts`` (what is shown and
 * picked), ``connection.ts`` (the socket, and what the server's messages do), and this
 * module: what a person asks for (a request, Fix, Undo, Stop, an approval, a fix decided).
 */
import { ChatConnection } from './connection';
import { Entry } from './tokens';

export class ChatModel extends ChatConnection {
  send(text: string): void {
    this._ask(text, false);
  }

  /**
   * Ask a replayed request again, of the model this time, in the notebook it
   * ran in (``entry`` is a replayed ``done`` entry).
   */
  regenerate(entry: Entry): void {
    if (entry.kind === 'done' && entry.replayed) {
      const { request, path } = entry.replayed;
      // The fresh cells go where the replayed ones are, and take their place once the run
      // has worked (a newcomer found a third copy of the code after Regenerate).
      const old = this._runCells(path, entry);
      if (old.length > 0) {
        this.bridge.reveal(path, old[old.length - 1]);
      }
      this._ask(request, true, path, old);
    }
  }

  /**
   * "Use this one": apply candidate ``candidate`` of the vote that ended with ``entry`` (a
   * ``done`` entry with other results).  No model call; its cells take the applied ones' place.
   */
  use(entry: Entry, candidate: number): void {
    if (entry.kind === 'done' && entry.asked) {
      const { request, path, cells } = entry.asked;
      this._ask(request, false, path, cells ?? this._runCells(path, entry), candidate);
    }
  }

  /** The cells the run that ended with ``done`` inserted, from its code entries. */
  private _runCells(path: string, done: Entry): string[] {
    const chat = this._chat(path);
    const end = chat.indexOf(done);
    let start = end;
    while (start > 0 && chat[start - 1].kind !== 'user') {
      start--;
    }
    return chat.slice(start, end).flatMap(e => (e.kind === 'code' && e.cellId ? [e.cellId] : []));
  }

  private _ask(text: string, regenerate: boolean, path?: string, replacing: string[] = [], use?: number): void {
    const request = text.trim();
    // Typed into the box (not Regenerate, nor a candidate taken): given back to it if Stop ends the wait.
    const typed = !regenerate && use === undefined ? text : undefined;
    if (!request || this.busy || this._deferred(path, at => this._ask(text, regenerate, at, replacing, use), typed)) {
      return;
    }
    const target = this.bridge.target(path);
    if (typeof target === 'string') {
      const shown = this._chat(this._path ?? '');
      shown.push({ kind: 'user', text: request }, { kind: 'error', text: target });
      this._changed.emit();
      return;
    }
    this._path = target.path;
    this._chat(target.path).push({ kind: 'user', text: request });
    this._target = target;
    this._replacing = replacing;
    this._using = use !== undefined;
    this._request = request;
    this._changed.emit();
    const fresh = this._fresh.delete(target.path);
    const model = this.model;
    this._withSocket(socket =>
      socket.send(
        JSON.stringify({
          type: 'ask',
          request,
          path: target.path,
          kernel_id: target.kernelId,
          anchor_cell_id: target.anchorCellId,
          cells: target.cells,
          new: fresh,
          ...(model !== null ? { model } : {}),
          ...(regenerate ? { regenerate: true } : {}),
          ...(use !== undefined ? { use } : {}),
          ...(this._candidates !== null ? { candidates: this._candidates } : {})
        })
      )
    );
  }

  /**
   * The Fix / Explain action on a cell that raised (the active cell of the notebook at
   * ``path`` when ``cellId`` is null): the server tries a fix in the kernel and offers it.
   */
  fix(kind: 'fix' | 'explain', path?: string, cellId: string | null = null): void {
    if (this.busy) {
      this._chat(this._path ?? '').push({ kind: 'error', text: 'A request is already running; stop it first.' });
      this._changed.emit();
      return;
    }
    if (this._deferred(path, at => this.fix(kind, at, cellId))) {
      return;
    }
    const target = this.bridge.target(path);
    const failed = typeof target === 'string' ? null : target.failed(cellId);
    if (typeof target === 'string' || !failed) {
      const text = typeof target === 'string' ? target : 'This cell did not raise an error: there is nothing to fix.';
      this._chat(this._path ?? '').push({ kind: 'error', text });
      this._changed.emit();
      return;
    }
    const label = failed.count !== null ? `In [${failed.count}]` : 'the cell';
    const request = `${kind === 'fix' ? 'Fix' : 'Explain'} ${label}: ${failed.error.ename}: ${failed.error.evalue}`;
    this._path = target.path;
    this._chat(target.path).push({ kind: 'user', text: request });
    this._target = target;
    this._replacing = [];
    this._using = false;
    this._request = request;
    this._changed.emit();
    const model = this.model;
    this._withSocket(socket =>
      socket.send(
        JSON.stringify({
          type: 'fix',
          kind,
          path: target.path,
          kernel_id: target.kernelId,
          cell_id: failed.cellId,
          source: failed.source,
          count: failed.count,
          error: failed.error,
          ...(model !== null ? { model } : {})
        })
      )
    );
  }

  /** Accept (the fix goes in its cell; the kernel keeps the tried attempt) or reject (rolled back). */
  decideFix(id: string, accept: boolean): void {
    const entry = this.entries.find(e => e.kind === 'fix' && e.id === id && !e.decision);
    const target = this._target;
    if (!entry || entry.kind !== 'fix' || !target) {
      return;
    }
    if (accept && !target.applyFix(entry.cellId, entry.after, entry.outputs, entry.metadata)) {
      accept = false; // the cell is gone: nothing to put the fix in, so it is rolled back
    }
    entry.decision = accept ? 'accepted' : 'rejected';
    this._socket?.send(JSON.stringify({ type: 'fix_decision', id, accept }));
    this._changed.emit();
  }

  /**
   * Undo the request that ended with ``entry`` (a done entry the kernel keeps a way back for):
   * the server has the kernel take it back; ``undone`` says how, and its cells are taken out.
   */
  undo(entry: Entry): void {
    const path = this._path;
    if (entry.kind !== 'done' || !entry.undo || entry.undone || this.busy || path === null) {
      return;
    }
    const target = this.bridge.target(path);
    if (typeof target === 'string') {
      this._chat(path).push({ kind: 'error', text: target });
      this._changed.emit();
      return;
    }
    const request = entry.undo;
    this._undoing.add(request);
    this._changed.emit();
    this._withSocket(socket =>
      socket.send(JSON.stringify({ type: 'undo', path: target.path, kernel_id: target.kernelId, request }))
    );
  }

  /** Whether an Undo of this done entry was sent and has not been answered yet. */
  undoing(entry: Entry): boolean {
    return entry.kind === 'done' && !!entry.undo && this._undoing.has(entry.undo);
  }

  /** Forget the shown notebook's conversation: in the panel and in the server. */
  clear(): void {
    const path = this._path;
    if (this.busy || path === null) {
      return;
    }
    this._chats.set(path, []);
    this._fresh.add(path);
    this._withSocket(socket => socket.send(JSON.stringify({ type: 'forget', path })));
    this._changed.emit();
  }

  /** Stop the run: the server cancels the model call, and a running cell is interrupted. */
  stop(): void {
    this._giveUp?.(false); // a request still waiting for its notebook's kernel is not sent
    if (!this._target) {
      return;
    }
    // Stop the run first, so the interrupted cell is not taken for a bug to fix.
    this._socket?.send(JSON.stringify({ type: 'stop' }));
    this._target.interrupt();
  }

  /** The request Stop gave back (it waited for its notebook's kernel and was never sent), once. */
  takeReturned(): string | null {
    const text = this._returned;
    this._returned = null;
    return text;
  }

  decide(id: string, approved: boolean): void {
    // The newest undecided one: a transcript saved before approval ids were unique repeats "a1".
    const entry = [...this.entries].reverse().find(e => e.kind === 'approval' && e.id === id && !e.decision);
    if (entry && entry.kind === 'approval') {
      entry.decision = approved ? 'approved' : 'rejected';
      this._socket?.send(JSON.stringify({ type: 'approval', id, approved }));
      this._changed.emit();
    }
  }

  /**
   * Whether ``again`` was put off until the notebook (``path``, else the active one, pinned now)
   * has found its kernel: it is then called once, with that notebook's path, and is not put off
   * a second time.  Meanwhile the panel is busy (nothing else is sent), says what it waits for,
   * and Stop gives the wait up; ``draft``, the request as typed, then goes back to the box.
   */
  private _deferred(path: string | undefined, again: (path: string | undefined) => void, draft?: string): boolean {
    if (this._settled) {
      this._settled = false;
      return false;
    }
    const pinned = path ?? this.bridge.activePath() ?? undefined;
    const wait = this.bridge.settle(pinned);
    if (wait === null) {
      return false;
    }
    const chat = this._chat(pinned ?? this._path ?? '');
    const line: Entry = { kind: 'notice', text: 'waiting for the notebook’s kernel…', waiting: true };
    const settled = (go: boolean): void => {
      if (this._giveUp !== settled) {
        return; // given up already (Stop), or a later wait's
      }
      this._giveUp = null;
      if (!go && draft !== undefined) {
        this._returned = draft; // the composer had cleared it: a person expects it back
      }
      const at = chat.indexOf(line);
      if (at >= 0) {
        chat.splice(at, 1);
      }
      this._changed.emit();
      if (go) {
        this._settled = true;
        try {
          again(pinned);
        } finally {
          this._settled = false;
        }
      }
    };
    this._giveUp = settled; // busy from here: set before the panel is told
    chat.push(line);
    this._changed.emit();
    void wait.then(() => settled(true));
    return true;
  }

  /** Notebooks whose next request starts a new conversation. */
  private _fresh = new Set<string>();
  private _returned: string | null = null; // a request given back to the composer (takeReturned)
  private _settled = false; // that wait is over: the request it held goes now
}
