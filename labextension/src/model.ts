/**
 * The chat's state and its conversation with the server: no DOM.
 *
 * One websocket per panel.  Each notebook has its own chat, kept by the
 * server: the panel shows the active notebook's (asking the server for its
 * history the first time), and a request continues it.  The server drives a
 * run; this model shows what it says and runs cells when asked, through the
 * notebook target pinned when the request was sent.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { asked, isPlainObject, parseProvenance, parseUsage } from './parse';
import {
  Entry,
  INotebookBridge,
  IOfferedModel,
  IRunTarget,
  IServerConfig,
  ISessionUsage,
  METADATA_KEY,
  ServerMessage
} from './tokens';
import { finish, fromHistory, settleAnswer, show, undone } from './transcript';

const PICKED_KEY = 'jupyter-ai-ci:model';
const CANDIDATES_KEY = 'jupyter-ai-ci:candidates';
/** The "Check" picker's choices: candidates that must agree (1: no vote), or 'auto': two for a
 * question about data on the managed local model, one otherwise (the server decides). */
export type CandidateChoice = number | 'auto';
export const CANDIDATE_CHOICES: CandidateChoice[] = ['auto', 1, 2, 3, 5];

export class ChatModel {
  constructor(
    private readonly bridge: INotebookBridge,
    private readonly openSocket: () => WebSocket,
    private readonly storage: Pick<Storage, 'getItem' | 'setItem'> | null = null
  ) {
    this._picked = storage?.getItem(PICKED_KEY) ?? null;
    const stored = storage?.getItem(CANDIDATES_KEY);
    const k = stored === 'auto' ? 'auto' : Number(stored);
    this._candidates = CANDIDATE_CHOICES.includes(k) ? k : null;
  }

  /** Candidates that must agree for the next request: the one picked, else the server's default. */
  get candidates(): CandidateChoice {
    return this._candidates ?? this._config?.candidates ?? 'auto';
  }
  set candidates(k: CandidateChoice) {
    this._candidates = k;
    this.storage?.setItem(CANDIDATES_KEY, String(k));
    this._changed.emit();
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }
  /** The conversation of the notebook shown (the active one, or the one a run works on). */
  get entries(): readonly Entry[] {
    return this._path === null ? [] : this._chat(this._path);
  }
  get busy(): boolean {
    return this._target !== null || this._giveUp !== null;
  }
  get config(): IServerConfig | null {
    return this._config;
  }
  set config(value: IServerConfig | null) {
    this._config = value;
    this._changed.emit();
  }
  /** Why the server's settings could not be read, for the header. */
  get configError(): string | null {
    return this._configError;
  }
  set configError(value: string | null) {
    this._configError = value;
    this._changed.emit();
  }
  /** The notebook a request would work on (or is working on). */
  get notebookName(): string | null {
    return this._target?.name ?? this.bridge.activeName();
  }

  /** What the shown notebook's chat has used, as the server counts it. */
  get usage(): ISessionUsage | null {
    return this._path === null ? null : this._usage.get(this._path) ?? null;
  }

  /** The models the server offers: the picker's choices (a request may name no other). */
  get models(): IOfferedModel[] {
    const config = this._config;
    if (!config) {
      return [];
    }
    return config.models?.length ? config.models : [{ name: config.model, label: config.model }];
  }

  /** The picked model: the last one picked while the server still offers it, else its default. */
  get model(): string | null {
    const models = this.models;
    return models.find(m => m.name === this._picked)?.name ?? models[0]?.name ?? null;
  }
  set model(name: string | null) {
    this._picked = name;
    if (name !== null) {
      this.storage?.setItem(PICKED_KEY, name);
    }
    this._changed.emit();
  }

  /** Follow the active notebook: show its chat (unless a run is showing its own). */
  refresh(): void {
    if (!this.busy) {
      const path = this.bridge.activePath();
      if (path !== this._path) {
        this._path = path;
        this._load(path);
      }
    }
    this._changed.emit();
  }

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

  /** The figure a code entry's cell drew, as a data URL (read from the cell: it is not copied). */
  figure(entry: Entry): string | null {
    return entry.kind === 'code' && entry.figure && entry.cellId && entry.path
      ? this.bridge.figure(entry.path, entry.cellId)
      : null;
  }

  /**
   * The picture a model request was sent of a code entry's figure: kept when the request was
   * made, else read from the cell if it is still there; null when it is gone.
   */
  shownPicture(entry: Entry, index: number): string | null {
    const figure = entry.kind === 'code' ? entry.shown?.[index] : undefined;
    if (!figure || !figure.picture || entry.kind !== 'code') {
      return null;
    }
    return figure.image ?? (entry.cellId && entry.path ? this.bridge.figure(entry.path, entry.cellId, figure.output) : null);
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

  /** Read now the pictures a request was just sent: the fix it asks for replaces their cell. */
  private _keepPictures(path: string): void {
    for (const entry of this._chat(path)) {
      if (entry.kind === 'code' && entry.cellId && entry.shown) {
        for (const figure of entry.shown) {
          if (figure.picture && !figure.image) {
            figure.image = this.bridge.figure(path, entry.cellId, figure.output) ?? undefined;
          }
        }
      }
    }
  }

  /** Whether a code entry's cell is still in its notebook (null: the notebook is not open). */
  holds(entry: Entry): boolean | null {
    return entry.kind === 'code' && !!entry.cellId && !!entry.path
      ? this.bridge.holds(entry.path, entry.cellId)
      : null;
  }

  /** Select and scroll to the cell a code entry ran in. */
  reveal(entry: Entry): boolean {
    return entry.kind === 'code' && !!entry.cellId && !!entry.path
      ? this.bridge.reveal(entry.path, entry.cellId)
      : false;
  }

  private _chat(path: string): Entry[] {
    let entries = this._chats.get(path);
    if (!entries) {
      entries = [];
      this._chats.set(path, entries);
    }
    return entries;
  }

  /** Ask the server for a notebook's earlier messages, once per notebook and page. */
  private _load(path: string | null): void {
    if (path !== null && !this._loaded.has(path)) {
      this._loaded.add(path);
      this._withSocket(socket => socket.send(JSON.stringify({ type: 'history', path })));
    }
  }

  private _history(msg: Extract<ServerMessage, { type: 'history' }>): void {
    const path = typeof msg.path === 'string' ? msg.path : null;
    // Only into a chat nothing has happened in yet on this page (a request may have started).
    if (path === null || this._chat(path).length > 0) {
      return;
    }
    const { entries, session } = fromHistory(msg.runs, path);
    this._chats.set(path, entries);
    // The server's own count first: after New chat there is no run to read it from.
    const usage = parseUsage(msg.session) ?? parseUsage(session);
    if (usage) {
      this._usage.set(path, usage);
    }
  }

  private _withSocket(action: (socket: WebSocket) => void): void {
    const socket = this._socket;
    if (socket && socket.readyState === WebSocket.OPEN) {
      action(socket);
      return;
    }
    if (socket && socket.readyState === WebSocket.CONNECTING) {
      socket.addEventListener('open', () => action(socket));
      return;
    }
    const fresh = this.openSocket();
    this._socket = fresh;
    fresh.addEventListener('open', () => action(fresh));
    fresh.onmessage = event => {
      let msg: unknown;
      try {
        msg = JSON.parse(String(event.data));
      } catch {
        console.warn('jupyter-ai-ci: ignored a malformed message from the server');
        return;
      }
      if (isPlainObject(msg)) {
        this._handle(msg as unknown as ServerMessage);
      }
    };
    fresh.onclose = () => {
      if (this._socket === fresh) {
        this._socket = null;
        if (this._target) {
          this._finish('error', 'The connection to the server was lost; try again.');
        }
      }
    };
  }

  private _handle(msg: ServerMessage): void {
    switch (msg.type) {
      case 'history':
        this._history(msg);
        break;
      case 'execute':
        void this._execute(msg);
        return;
      case 'provenance':
        this._provenance(msg);
        return;
      case 'done':
        if (this._target) {
          settleAnswer(this._chat(this._target.path), msg.answer);
        }
        this._finish(msg.status, msg.message, msg.replayed === true, asked(msg.tokens), msg.tokens, msg.session,
          msg.consensus, msg.undo);
        return;
      case 'undone':
        this._undone(msg);
        break;
      default: {
        const target = this._target;
        if (!target || !show(this._chat(target.path), msg, target.path)) {
          return; // started, model_done, or a message from no run
        }
        if (msg.type === 'figures') {
          this._keepPictures(target.path);
        }
      }
    }
    this._changed.emit();
  }

  /** An Undo's answer: the line in the chat of its notebook, the undone cells taken out. */
  private _undone(msg: Extract<ServerMessage, { type: 'undone' }>): void {
    if (typeof msg.request === 'string') {
      this._undoing.delete(msg.request);
    }
    const path = typeof msg.path === 'string' && msg.path ? msg.path : this._path;
    if (path === null) {
      return;
    }
    const cells = undone(this._chat(path), msg);
    if (cells.length > 0) {
      this.bridge.deleteGenerated(path, cells);
    }
  }

  private async _execute(msg: Extract<ServerMessage, { type: 'execute' }>): Promise<void> {
    const target = this._target;
    const socket = this._socket;
    if (!target || !socket) {
      return;
    }
    const reply = await target.execute(msg);
    if (socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(reply));
    }
  }

  /** Give the run's cells their provenance, in the notebook the run works on. */
  private _provenance(msg: unknown): void {
    const target = this._target;
    const parsed = parseProvenance(msg);
    if (!target || !parsed) {
      return;
    }
    try {
      target.annotate(parsed.cells, METADATA_KEY, parsed.value);
    } catch (e) {
      console.warn("jupyter-ai-ci: could not set the cells' provenance", e);
    }
  }

  private _finish(
    status: string,
    message: string,
    replayed = false,
    live = false,
    tokens?: unknown,
    session?: unknown,
    consensus?: unknown,
    undo?: unknown
  ): void {
    const target = this._target;
    if (!target) {
      return;
    }
    const usage = parseUsage(session);
    if (usage) {
      this._usage.set(target.path, usage);
    }
    finish(
      this._chat(target.path),
      String(status),
      message,
      tokens,
      replayed ? { request: this._request, path: target.path, live } : undefined,
      consensus,
      // A chosen candidate that did not apply: the others offered here replace the applied
      // cells, which stay, not this run's (taken out below).
      { request: this._request, path: target.path, ...(this._using && status !== 'success' ? { cells: this._replacing } : {}) },
      undo
    );
    if (status === 'success' && this._replacing.length > 0) {
      target.retire(this._replacing); // a failed regeneration leaves them
    } else if (this._using && status === 'failed') {
      // A chosen candidate that failed (run on top of the applied one, rolled back): its cell leaves,
      // the applied cells stand, and the transcript keeps the error.
      target.withdraw();
    }
    this._replacing = [];
    this._using = false;
    this._target = null;
    this.refresh(); // the active notebook may have changed during the run
  }

  private _chats = new Map<string, Entry[]>();
  private _usage = new Map<string, ISessionUsage>();
  private _loaded = new Set<string>();
  /** Requests whose Undo was sent and not answered yet (their button waits). */
  private _undoing = new Set<string>();
  /** Notebooks whose next request starts a new conversation. */
  private _fresh = new Set<string>();
  private _path: string | null = null;
  private _picked: string | null;
  private _candidates: CandidateChoice | null;
  private _request = '';
  private _config: IServerConfig | null = null;
  private _configError: string | null = null;
  private _target: IRunTarget | null = null;
  private _returned: string | null = null; // a request given back to the composer (takeReturned)
  private _settled = false; // that wait is over: the request it held goes now
  private _giveUp: ((go: boolean) => void) | null = null; // ends that wait: go, or not (Stop)
  /** The cells a regeneration replaces once it has worked. */
  private _replacing: string[] = [];
  /** The run applies a candidate chosen by the person ("use this one"). */
  private _using = false;
  private _socket: WebSocket | null = null;
  private _changed = new Signal<this, void>(this);
}
