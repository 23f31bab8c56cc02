/**
 * A tried fix in the panel: the cell's diff (before → after), what the attempt printed,
 * "Ran without error", and Accept / Reject (``model.decideFix``).
 */
import { Button } from '@jupyterlab/ui-components';
import React from 'react';

import { ChatModel } from './model';
import { Entry } from './tokens';

export function FixView(props: { entry: Extract<Entry, { kind: 'fix' }>; model: ChatModel }): JSX.Element {
  const e = props.entry;
  const printed = e.outputs
    .map(o => {
      const data = (o.data ?? {}) as Record<string, unknown>;
      const text = o.output_type === 'stream' ? o.text : data['text/plain'];
      return Array.isArray(text) ? text.join('') : String(text ?? '');
    })
    .filter(t => t)
    .join('\n');
  const lines = e.diff.split('\n').filter(l => !/^(---|\+\+\+|@@)/.test(l));
  return (
    <div className="jp-aici-entry jp-aici-fix">
      <div className="jp-aici-label">the cell, before → after</div>
      <pre className="jp-aici-diff">
        {lines.map((line, i) => (
          <div
            key={i}
            className={line.startsWith('+') ? 'jp-aici-diff-add' : line.startsWith('-') ? 'jp-aici-diff-del' : 'jp-aici-diff-ctx'}
          >
            {line || ' '}
          </div>
        ))}
      </pre>
      <div className="jp-aici-fix-ran">✓ {e.ran}</div>
      {printed && <pre className="jp-aici-fix-output">{printed}</pre>}
      {e.decision ? (
        <div className="jp-aici-decision">
          {e.decision === 'accepted'
            ? 'accepted: the cell holds the fix'
            : e.decision === 'rejected'
              ? 'rejected: rolled back, the cell is as it was'
              : 'not answered: the run ended first, the fix was rolled back'}
        </div>
      ) : (
        <div>
          <Button className="jp-mod-styled jp-mod-accept jp-aici-fix-accept" onClick={() => props.model.decideFix(e.id, true)}>
            Accept
          </Button>
          <Button className="jp-mod-styled jp-mod-reject jp-aici-fix-reject" onClick={() => props.model.decideFix(e.id, false)}>
            Reject
          </Button>
        </div>
      )}
    </div>
  );
}
