/**
 * Token counts in the panel: the short form of a count ("1.2k") and the session's usage line
 * under the request box.  Apart so the entries (a request's own count, ``entry.tsx``) and the
 * panel (``widget.tsx``) write counts the same way.
 */
import React from 'react';

import { ISessionUsage } from './tokens';

/** 1234 -> "1.2k", 2500000 -> "2.5M". */
export function compact(n: number): string {
  if (n < 1000) {
    return String(n);
  }
  const [div, unit] = n < 1e6 ? [1e3, 'k'] : [1e6, 'M'];
  const v = n / div;
  return `${v < 10 ? v.toFixed(1).replace(/\.0$/, '') : Math.round(v)}${unit}`;
}

export function UsageLine(props: { usage: ISessionUsage | null }): JSX.Element | null {
  const u = props.usage;
  if (!u) {
    return null;
  }
  const tokens = u.prompt + u.completion;
  return (
    <div
      className="jp-aici-usage"
      title={
        `This notebook's chat since the Jupyter server started (New chat does not reset it): ` +
        `${u.requests} model call(s) — a request that needed a fix makes several — ` +
        `${u.prompt} prompt + ${u.completion} completion tokens`
      }
    >
      session: {u.requests} model {u.requests === 1 ? 'call' : 'calls'} · {compact(tokens)}{' '}
      {tokens === 1 ? 'token' : 'tokens'}
    </div>
  );
}
