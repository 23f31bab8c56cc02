/**
 * What the chat panel shows and what a person picked, with no socket and no DOM: each
 * notebook's chat, the server's settings, the picked model and candidates, and the cells
 * code entries point at.  The base of ``ChatModel``: ``connection.ts`` adds the server's
 * messages, ``model.ts`` the requests a person makes; apart so each reads as one job.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { Entry, INotebookBridge, IOfferedModel, IRunTarget, IServerConfig, ISessionUsage } from './tokens';

const PICKED_KEY = 'jupyter-ai-ci:model';
const CANDIDATES_KEY = 'jupyter-ai-ci:candidates';
/** The "Check" picker's choices: candidates that must agree (1: no vote), or 'auto': two for a
 * question about data on the managed local model, one otherwise (the server decides). */
export type CandidateChoice = number | 'auto';
export const CANDIDATE_CHOICES: CandidateChoice[] = ['auto', 1, 2, 3, 5];

export class ChatState {
  constructor(
    protected readonly bridge: INotebookBridge,
    protected readonly openSocket: () => WebSocket,
    protected readonly storage: Pick<Storage, 'getItem' | 'setItem'> | null = null
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

  protected _chat(path: string): Entry[] {
    let entries = this._chats.get(path);
    if (!entries) {
      entries = [];
      this._chats.set(path, entries);
    }
    return entries;
  }

  protected _chats = new Map<string, Entry[]>();
  protected _usage = new Map<string, ISessionUsage>();
  protected _path: string | null = null;
  private _picked: string | null;
  protected _candidates: CandidateChoice | null;
  private _config: IServerConfig | null = null;
  private _configError: string | null = null;
  protected _target: IRunTarget | null = null;
  // A request waiting for its notebook's kernel (model.ts, _deferred): ends that wait, go or not (Stop).
  protected _giveUp: ((go: boolean) => void) | null = null;
  protected _changed = new Signal<this, void>(this);
}
