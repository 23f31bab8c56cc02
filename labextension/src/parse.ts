/**
 * Checks of what arrives from outside the panel -- the server's messages and
 * the kernel's comm -- before any of it touches the notebook or the DOM.
 */
import { JSONObject } from '@lumino/coreutils';

import { METADATA_KEY, ISessionUsage } from './tokens';

/** At most this many cells per provenance message. */
export const MAX_PROVENANCE_CELLS = 200;
/** At most this much JSON text of provenance per cell. */
export const MAX_PROVENANCE_CHARS = 100_000;
export const CELL_ID = /^[A-Za-z0-9_-]{1,64}$/; // nbformat 4.5 cell ids

export function isPlainObject(value: unknown): value is JSONObject {
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
export function asked(tokens: unknown): boolean {
  return (
    isPlainObject(tokens) &&
    [tokens.prompt, tokens.completion].some(n => typeof n === 'number' && n > 0)
  );
}


/** ``done.tokens``, when it is two non-negative counts. */
export function parseTokens(value: unknown): { prompt: number; completion: number } | null {
  const usage = isPlainObject(value) ? parseUsage({ ...value, requests: 0 }) : null;
  return usage ? { prompt: usage.prompt, completion: usage.completion } : null;
}

/** At most this much JSON text of a comm cell's ``jupyter_ai_ci`` metadata. */
export const MAX_COMM_METADATA_CHARS = 100_000;
/** Output kinds a comm cell may carry (nbformat 4). */
const OUTPUT_TYPES = new Set(['stream', 'display_data', 'execute_result', 'error']);
/** Script MIME types: never taken from the comm (JupyterLab would run them in a trusted cell). */
const SCRIPT_MIME = /javascript|ecmascript/i;

/** A cell as the kernel's comm may describe it: the rest of what it sent is dropped. */
export interface ICommCell {
  source: string;
  metadata: JSONObject;
  outputs: JSONObject[];
  id?: string;
  execution_count?: number;
}

function commOutput(out: unknown): JSONObject | null {
  if (!isPlainObject(out) || typeof out.output_type !== 'string' || !OUTPUT_TYPES.has(out.output_type)) {
    return null;
  }
  if (out.output_type === 'stream' || out.output_type === 'error') {
    return out;
  }
  // The cell is inserted untrusted, so JupyterLab sanitizes HTML and refuses SVG/scripts;
  // scripts are dropped as well, whatever trust the cell gets later.
  const data: JSONObject = {};
  for (const [mime, value] of Object.entries(isPlainObject(out.data) ? out.data : {})) {
    if (!SCRIPT_MIME.test(mime)) {
      data[mime] = value as any;
    }
  }
  if (Object.keys(data).length === 0) {
    return null;
  }
  const kept: JSONObject = { output_type: out.output_type, data, metadata: {} };
  if (out.output_type === 'execute_result') {
    kept.execution_count = typeof out.execution_count === 'number' ? out.execution_count : null;
  }
  return kept;
}

/**
 * The cells of a comm ``insert`` message, reduced to what ``%%ask`` sends: a source, our own
 * metadata key (never ``trusted`` or any other key the kernel adds), passive outputs, an id.
 * Kernel code can open this comm with anything (#15: it sent ``trusted: true`` and a script).
 */
export function parseCommCells(value: unknown): ICommCell[] {
  const cells: ICommCell[] = [];
  for (const c of Array.isArray(value) ? value.slice(0, MAX_PROVENANCE_CELLS) : []) {
    if (!isPlainObject(c) || typeof c.source !== 'string') {
      continue;
    }
    const metadata: JSONObject = {};
    const ours = isPlainObject(c.metadata) ? c.metadata[METADATA_KEY] : undefined;
    if (isPlainObject(ours) && JSON.stringify(ours).length <= MAX_COMM_METADATA_CHARS) {
      metadata[METADATA_KEY] = ours;
    }
    const outputs = (Array.isArray(c.outputs) ? c.outputs : [])
      .map(commOutput)
      .filter((o): o is JSONObject => o !== null);
    cells.push({
      source: c.source,
      metadata,
      outputs,
      ...(typeof c.id === 'string' && CELL_ID.test(c.id) ? { id: c.id } : {}),
      // The %%ask cell's own number: the code ran in that execution.
      ...(Number.isSafeInteger(c.execution_count) && (c.execution_count as number) >= 0
        ? { execution_count: c.execution_count as number }
        : {})
    });
  }
  return cells;
}
