/**
 * The chat's state and its conversation with the server: no DOM.
 *
 * One websocket per panel, opened on the first request.  The server drives
 * the run; this model shows what it says and runs cells when asked, through
 * the notebook target pinned when the request was sent.
 */
import { ISignal, Signal } from '@lumino/signaling';

import {
  Entry,
  INotebookBridge,
  IRunTarget,
  IServerConfig,
  ServerMessage
} from './tokens';

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

  /** Tell views the active notebook changed. */
  refresh(): void {
    this._changed.emit();
  }

  send(text: string): void {
    const request = text.trim();
    if (!request || this.busy) {
      return;
    }
    const target = this.bridge.target();
    this._entries.push({ kind: 'user', text: request });
    if (typeof target === 'string') {
      this._entries.push({ kind: 'error', text: target });
      this._changed.emit();
      return;
    }
    this._target = target;
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
          new: fresh
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
    fresh.onmessage = event => this._handle(JSON.parse(String(event.data)));
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
      case 'done':
        this._finish(msg.status, msg.message);
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

  private _finish(status: string, message: string): void {
    const last = this._entries[this._entries.length - 1];
    if (last?.kind === 'model' && !last.text) {
      this._entries.pop(); // the model never answered
    }
    for (const entry of this._entries) {
      if (entry.kind === 'code' && entry.status === 'running') {
        entry.status = 'stopped'; // its run ended before the cell did
      }
    }
    const kind = status === 'error' ? 'error' : 'done';
    this._entries.push(
      kind === 'error' ? { kind, text: message } : { kind, text: message, status }
    );
    this._target = null;
    this._changed.emit();
  }

  private _entries: Entry[] = [];
  private _fresh = false;
  private _config: IServerConfig | null = null;
  private _configError: string | null = null;
  private _target: IRunTarget | null = null;
  private _socket: WebSocket | null = null;
  private _changed = new Signal<this, void>(this);
}
