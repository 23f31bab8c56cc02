/**
 * The chat's state and its conversation with the server: no DOM.
 *
 * One websocket per panel, opened on the first request.  The server drives
 * the run; this model shows what it says and runs cells when asked, through
 * the notebook target pinned when the request was sent.
 */
import { JSONObject } from '@lumino/coreutils';
import { ISignal, Signal } from '@lumino/signaling';

import {
  Entry,
  INotebookBridge,
  IRunTarget,
  IServerConfig,
  ISessionUsage,
  METADATA_KEY,
  ServerMessage
} from './tokens';

/** At most this many cells per provenance message. */
export const MAX_PROVENANCE_CELLS = 200;
/** At most this much JSON text of provenance per cell. */
export const MAX_PROVENANCE_CHARS = 100_000;
const CELL_ID = /^[A-Za-z0-9_-]{1,64}$/; // nbformat 4.5 cell ids

function isPlainObject(value: unknown): value is JSONObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return false;
  }
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The cells and the metadata of a ``provenance`` message, or null when it is
 * not what the server sends: a plain object under ``jupyter_ai_ci`` (of
 * bounded size), and a list of cell ids (only well-formed strings are kept,
 * at most ``MAX_PROVENANCE_CELLS``).
 */
export function parseProvenance(
  msg: unknown
): { cells: string[]; value: JSONObject } | null {
  if (!isPlainObject(msg) || !Array.isArray(msg.cells) || !isPlainObject(msg.metadata)) {
    return null;
  }
  const value = msg.metadata[METADATA_KEY];
  if (!isPlainObject(value)) {
    return null;
  }
  let size: number;
  try {
    size = JSON.stringify(value).length;
  } catch {
    return null;
  }
  if (size > MAX_PROVENANCE_CHARS) {
    return null;
  }
  const cells: string[] = [];
  for (const id of msg.cells) {
    if (typeof id === 'string' && CELL_ID.test(id) && !cells.includes(id)) {
      cells.push(id);
      if (cells.length === MAX_PROVENANCE_CELLS) {
        break;
      }
    }
  }
  return cells.length > 0 ? { cells, value } : null;
}

/** ``done.session``, when it is three non-negative counts. */
export function parseUsage(value: unknown): ISessionUsage | null {
  if (!isPlainObject(value)) {
    return null;
  }
  const count = (v: unknown) =>
    typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : null;
  const requests = count(value.requests);
  const prompt = count(value.prompt);
  const completion = count(value.completion);
  return requests === null || prompt === null || completion === null
    ? null
    : { requests, prompt, completion };
}

/** Whether ``done.tokens`` says the model was asked (a replay whose code failed is fixed live). */
function asked(tokens: unknown): boolean {
  return (
    isPlainObject(tokens) &&
    [tokens.prompt, tokens.completion].some(n => typeof n === 'number' && n > 0)
  );
}

export class ChatModel {
  constructor(
    private readonly bridge: INotebookBridge,
    private readonly openSocket: () => WebSocket
  ) {}

  get changed(): ISignal<this, void> {
    return this._changed;
  }
  get entries(): readonly Entry[] {
    return this._entries;
  }
  get busy(): boolean {
    return this._target !== null;
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

  /** What this panel's server session has used (from the last run's ``done``). */
  get usage(): ISessionUsage | null {
    return this._usage;
  }

  /** Tell views the active notebook changed. */
  refresh(): void {
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
      this._ask(entry.replayed.request, true, entry.replayed.path);
    }
  }

  private _ask(text: string, regenerate: boolean, path?: string): void {
    const request = text.trim();
    if (!request || this.busy) {
      return;
    }
    const target = this.bridge.target(path);
    this._entries.push({ kind: 'user', text: request });
    if (typeof target === 'string') {
      this._entries.push({ kind: 'error', text: target });
      this._changed.emit();
      return;
    }
    this._target = target;
    this._request = request;
    this._changed.emit();
    const fresh = this._fresh;
    this._fresh = false;
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
          ...(regenerate ? { regenerate: true } : {})
        })
      )
    );
  }

  /** Forget the conversation: the panel and the server's earlier exchanges. */
  clear(): void {
    if (this.busy) {
      return;
    }
    this._entries = [];
    this._fresh = true;
    this._changed.emit();
  }

  stop(): void {
    if (!this._target) {
      return;
    }
    // Stop the run first, so the interrupted cell is not taken for a bug to fix.
    this._socket?.send(JSON.stringify({ type: 'stop' }));
    this._target.interrupt();
  }

  decide(id: string, approved: boolean): void {
    const entry = this._entries.find(e => e.kind === 'approval' && e.id === id);
    if (entry && entry.kind === 'approval' && !entry.decision) {
      entry.decision = approved ? 'approved' : 'rejected';
      this._socket?.send(JSON.stringify({ type: 'approval', id, approved }));
      this._changed.emit();
    }
  }

  private _withSocket(action: (socket: WebSocket) => void): void {
    const socket = this._socket;
    if (socket && socket.readyState === WebSocket.OPEN) {
      action(socket);
      return;
    }
    const fresh = this.openSocket();
    this._socket = fresh;
    fresh.onopen = () => action(fresh);
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
    const last = this._entries[this._entries.length - 1];
    switch (msg.type) {
      case 'started':
        break;
      case 'model':
        this._entries.push({ kind: 'model', text: '', purpose: msg.purpose });
        break;
      case 'text':
        if (last?.kind === 'model') {
          last.text += msg.text;
        }
        break;
      case 'model_done':
        return;
      case 'notice':
        if (msg.kind !== 'attempt') {
          this._entries.push({ kind: 'notice', text: msg.text });
        }
        break;
      case 'running':
        this._entries.push({
          kind: 'code',
          code: msg.code,
          attempt: msg.attempt,
          status: 'running'
        });
        break;
      case 'ran':
        for (let i = this._entries.length - 1; i >= 0; i--) {
          const entry = this._entries[i];
          if (entry.kind === 'code' && entry.status === 'running') {
            entry.status = msg.ok ? 'ok' : 'error';
            entry.error = msg.error ?? undefined;
            break;
          }
        }
        break;
      case 'approve':
        this._entries.push({
          kind: 'approval',
          id: msg.id,
          code: msg.code,
          reason: msg.reason
        });
        break;
      case 'execute':
        void this._execute(msg);
        return;
      case 'provenance':
        this._provenance(msg);
        return;
      case 'done':
        this._usage = parseUsage(msg.session) ?? this._usage;
        this._finish(msg.status, msg.message, msg.replayed === true, asked(msg.tokens));
        return;
    }
    this._changed.emit();
  }

  private async _execute(
    msg: Extract<ServerMessage, { type: 'execute' }>
  ): Promise<void> {
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
      console.warn('jupyter-ai-ci: could not set the cells\' provenance', e);
    }
  }

  private _finish(status: string, message: string, replayed = false, live = false): void {
    const last = this._entries[this._entries.length - 1];
    if (last?.kind === 'model' && !last.text) {
      this._entries.pop(); // the model never answered
    }
    for (const entry of this._entries) {
      if (entry.kind === 'code' && entry.status === 'running') {
        entry.status = 'stopped'; // its run ended before the cell did
      }
    }
    const text = typeof message === 'string' ? message : String(message ?? '');
    const path = this._target?.path;
    if (status === 'error') {
      this._entries.push({ kind: 'error', text });
    } else {
      this._entries.push({
        kind: 'done',
        text,
        status: String(status),
        ...(replayed && path !== undefined ? { replayed: { request: this._request, path, live } } : {})
      });
    }
    this._target = null;
    this._changed.emit();
  }

  private _entries: Entry[] = [];
  private _request = '';
  private _usage: ISessionUsage | null = null;
  private _fresh = false;
  private _config: IServerConfig | null = null;
  private _configError: string | null = null;
  private _target: IRunTarget | null = null;
  private _socket: WebSocket | null = null;
  private _changed = new Signal<this, void>(this);
}
