/**
 * Names and message shapes shared by the sidebar, the comm and the server.
 */
import { JSONObject } from '@lumino/coreutils';

export const PLUGIN_ID = 'jupyter-ai-ci:plugin';
export const PANEL_ID = 'jupyter-ai-ci-chat';
/** Comm target the kernel opens (``jupyter_ai_ci.comm.TARGET``). */
export const COMM_TARGET = 'jupyter_ai_ci';
/** Cell metadata key (``jupyter_ai_ci.sinks.METADATA_KEY``). */
export const METADATA_KEY = 'jupyter_ai_ci';
export const PROTOCOL = 1;

/** A model the server offers (``AICISettings.models``): the only names a request may send. */
export interface IOfferedModel {
  name: string;
  label: string;
}

/** What GET /jupyter-ai-ci/config answers; never a key. */
export interface IServerConfig {
  version: string;
  model: string;
  host: string;
  configured: boolean;
  /** The picker's choices, the server's default first. */
  models?: IOfferedModel[];
  /** Candidates that must agree, by default (AICISettings.candidates): 'auto' is two for a
   * question about data on the managed local model, one otherwise. */
  candidates?: number | 'auto';
}

/** A cell as context for the model: its source and a text of its outputs. */
export interface ICellContext {
  source: string;
  output: string;
}

/** The server asks the panel to insert a cell and run it. */
export interface IExecuteRequest {
  type: 'execute';
  id: string;
  code: string;
  after: string | null;
  replace: string[];
  metadata: JSONObject;
  /** The attempt the cell belongs to: a stopped run takes its attempt's cells out again. */
  attempt?: number;
  /** Run in the kernel without a cell: a fix tried before it is offered (``drivers/server/fix.py``). */
  scratch?: boolean;
}

/** A code cell that raised, as the Fix action sends it to the server. */
export interface IFailedCell {
  cellId: string;
  source: string;
  count: number | null;
  error: { ename: string; evalue: string; traceback: string[] };
}

/** The panel's answer to an ``IExecuteRequest``. */
export interface IExecuted {
  type: 'executed';
  id: string;
  status: 'ok' | 'error' | 'aborted';
  cell_id?: string;
  outputs?: JSONObject[];
  reason?: string;
  seconds?: number;
}

export type ServerMessage =
  | { type: 'started'; model: string; host: string }
  | { type: 'model'; purpose: 'first' | 'fix' | 'again' | 'next-step' | 'answer' | 'candidate' }
  | { type: 'text'; text: string }
  | { type: 'model_done' }
  | { type: 'notice'; kind: string; text: string; attempt: number; step: number }
  | { type: 'running'; code: string; attempt: number; step: number; block: number; scratch?: boolean }
  | {
      type: 'ran';
      attempt: number;
      block: number;
      ok: boolean;
      error: string | null;
      /** The cell the code ran in, and whether it drew a figure (shown as a thumbnail). */
      cell_id?: string | null;
      figure?: boolean;
    }
  /** What a fix, next-step or answer request told the model of an attempt's figures
   * (``PanelReporter._figures``): their words, and whether the picture went (untrusted). */
  | { type: 'figures'; attempt: number; purpose: string; figures: unknown }
  /** ``kind``: 'run' and 'install' show code; 'pictures' asks whether a figure's picture may go
   * to a hosted endpoint (no code). */
  | { type: 'approve'; id: string; code: string; reason: string; kind?: string }
  /** A transcript only: what the user clicked on an approval. */
  | { type: 'decided'; id: string; approved: boolean }
  /** A notebook's earlier requests and the messages they showed (untrusted until checked). */
  | { type: 'history'; path: string; runs: unknown; session?: unknown }
  | IExecuteRequest
  /** A fix tried in the kernel and held there: Accept keeps it, Reject rolls it back. */
  | {
      type: 'fix';
      id: string;
      cell_id: string;
      before: string;
      after: string;
      diff: string;
      outputs: JSONObject[];
      ran: string;
      metadata: JSONObject;
    }
  /** The run's whole provenance for the cells it left; untrusted until checked (``model.ts``). */
  | { type: 'provenance'; cells?: unknown; metadata?: unknown }
  | {
      type: 'done';
      status: string;
      message: string;
      answer?: string;
      attempts?: number;
      cells?: string[];
      /** Answered from the replay record: no model request was made. */
      replayed?: boolean;
      /** This request's tokens (untrusted until checked). */
      tokens?: unknown;
      /** This panel session's usage so far (untrusted until checked). */
      session?: unknown;
      /** Candidates that must agree: how sure, each group's result and code (untrusted). */
      consensus?: unknown;
      /** The kernel keeps this request's way back: the done line offers Undo (untrusted). */
      undo?: unknown;
    }
  /** What an Undo did (``drivers/server/undo.py``): its line, the cells to take out (untrusted). */
  | { type: 'undone'; ok: unknown; message: unknown; cells?: unknown; request?: unknown; path?: unknown };

/** A result the candidates' vote did not apply: "use this one" applies it (``model.use``). */
export interface IOtherResult {
  candidate: number;
  shown: string;
  count: number;
  code: string;
}

/** A figure of an attempt as a model request included it. */
export interface IShownFigure {
  /** The words the model read ("" when only the picture went). */
  text: string;
  /** The model was sent the picture (a model that takes images). */
  picture: boolean;
  /** Which output of the cell holds it. */
  output: number;
  /** The picture, read from the cell when the message came (a fix replaces the cell after). */
  image?: string;
}

/** What this panel's session has used so far, as the server counts it. */
export interface ISessionUsage {
  requests: number;
  prompt: number;
  completion: number;
}

/** One thing shown in the conversation. */
export type Entry =
  | { kind: 'user'; text: string }
  | { kind: 'model'; text: string; purpose: string }
  | {
      kind: 'code';
      code: string;
      attempt: number;
      status: 'running' | 'ok' | 'error' | 'stopped';
      /** A fix tried in the kernel without a cell (the Fix action). */
      tried?: boolean;
      error?: string;
      /** It ran without raising, and failed the run's check of its result (a chart's order). */
      failedCheck?: boolean;
      /** The notebook cell it ran in (for the link), and whether it drew a figure. */
      cellId?: string;
      figure?: boolean;
      path?: string;
      /** The figures of this cell that a later model request included. */
      shown?: IShownFigure[];
    }
  | { kind: 'notice'; text: string; waiting?: boolean }
  | {
      kind: 'done';
      text: string;
      status: string;
      /** This request's tokens. */
      tokens?: { prompt: number; completion: number };
      /** Set when the run was replayed: what "Regenerate" asks again, and where. */
      replayed?: { request: string; path: string; live: boolean };
      /** The other results of candidates that disagreed, and the request they answer. */
      others?: IOtherResult[];
      /** ``cells``: the cells "use this one" replaces, when they are not this run's own (a
       * chosen candidate that failed leaves the applied ones, inserted by the run before). */
      asked?: { request: string; path: string; cells?: string[] };
      /** The candidates disagreed (or none confirmed the result): shown as a warning, not a ✓. */
      unsure?: boolean;
      /** The request the kernel keeps a way back for (its Undo button), and whether it was undone. */
      undo?: string;
      undone?: boolean;
    }
  | { kind: 'error'; text: string }
  | {
      kind: 'fix';
      id: string;
      cellId: string;
      path: string;
      diff: string;
      after: string;
      outputs: JSONObject[];
      ran: string;
      metadata: JSONObject;
      decision?: 'accepted' | 'rejected' | 'ended';
    }
  | {
      kind: 'approval';
      id: string;
      code: string;
      reason: string;
      /** A figure's picture to a hosted endpoint, not code to run. */
      pictures?: boolean;
      /** ``ended``: the run ended (Stop, an error) before anyone answered. */
      decision?: 'approved' | 'rejected' | 'ended';
    };

/** The notebook a request works on, as the model sees it (no DOM). */
export interface IRunTarget {
  /** Shown in the panel. */
  readonly name: string;
  readonly path: string;
  readonly kernelId: string;
  readonly anchorCellId: string | null;
  readonly cells: ICellContext[];
  execute(request: IExecuteRequest): Promise<IExecuted>;
  /**
   * Set metadata ``key`` to ``value`` on the listed cells that this run inserted
   * and that are still in the notebook; return how many were set.  Never throws.
   */
  annotate(cellIds: readonly string[], key: string, value: JSONObject): number;
  /** Delete the listed cells that were generated (they carry provenance); how many went. */
  retire(cellIds: readonly string[]): number;
  /** Delete every cell this run inserted that is still there; how many went. */
  withdraw(): number;
  /** The code cell ``cellId`` (the active one when null) if its outputs hold an error. */
  failed(cellId: string | null): IFailedCell | null;
  /** Put an accepted fix in its cell: the source (one undo away), the attempt's outputs, the
   * ``metadata`` keys (the record of the old source); false when the cell is gone. */
  applyFix(cellId: string, source: string, outputs: JSONObject[], metadata: JSONObject): boolean;
  interrupt(): void;
}

/** Where requests go: the active notebook, pinned for the run. */
export interface INotebookBridge {
  /** The active notebook's name, or null when none is open. */
  activeName(): string | null;
  /** The active notebook's path (its chat's key), or null. */
  activePath(): string | null;
  /** The first image of a cell's outputs (of its output ``output`` when given), as a data URL, or null. */
  figure(path: string, cellId: string, output?: number): string | null;
  /** Select the cell and scroll to it; false when it is gone. */
  reveal(path: string, cellId: string): boolean;
  /** Whether the cell is in the notebook; null when the notebook is not open here. */
  holds(path: string, cellId: string): boolean | null;
  /** An undone request's cells taken out of the notebook at ``path``: only generated ones
   * (they carry provenance), never the person's own; how many went. */
  deleteGenerated(path: string, cellIds: readonly string[]): number;
  /**
   * Resolves once the active notebook (or the open one at ``path``) has found its kernel, or after
   * a bounded wait; null when there is nothing to wait for.  Just opened or reloaded, a notebook's
   * page has no kernel for a moment, and a request sent then was refused ("has no kernel").
   */
  settle(path?: string): Promise<void> | null;
  /**
   * Pin the active notebook (or the open notebook at ``path``) for a run; a
   * sentence when that is impossible.
   */
  target(path?: string): IRunTarget | string;
}
