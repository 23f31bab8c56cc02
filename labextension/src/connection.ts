/**
 * The chat's websocket to the server, and what the server's messages do to the chat: a
 * notebook's history, a run's lines, the cells it asks to run, its provenance and its end, an
 * Undo's answer.  The middle layer of ``ChatModel``; apart from ``model.ts`` (what a person
 * asks for, which only sends) so the receiving side reads on its own.
 */
import { fromHistory } from './history';
import { asked, isPlainObject, parseProvenance, parseUsage } from './parse';
import { finish, settleAnswer, undone } from './runend';
import { ChatState } from './state';
import { METADATA_KEY, ServerMessage } from './tokens';
import { show } from './transcript';

export class ChatConnection extends ChatState {
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

  protected _withSocket(action: (socket: WebSocket) => void): void {
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

  private _loaded = new Set<string>();
  /** Requests whose Undo was sent and not answered yet (their button waits). */
  protected _undoing = new Set<string>();
  protected _request = '';
  /** The cells a regeneration replaces once it has worked. */
  protected _replacing: string[] = [];
  /** The run applies a candidate chosen by the person ("use this one"). */
  protected _using = false;
  protected _socket: WebSocket | null = null;
}
