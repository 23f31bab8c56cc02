/**
 * What a person sets and types in the panel: the request box with Send / Stop, and the header's
 * model and "Check" (candidates) pickers.  Apart from ``widget.tsx`` (the panel's layout):
 * these are its inputs, each bound to one ``ChatModel`` setting or action.
 */
import { Button, HTMLSelect } from '@jupyterlab/ui-components';
import React, { useEffect, useState } from 'react';

import { ChatModel } from './model';
import { CANDIDATE_CHOICES } from './state';

export function Composer(props: { model: ChatModel }): JSX.Element {
  const [text, setText] = useState('');
  const model = props.model;
  useEffect(() => {
    // A request stopped before it was sent comes back to the box, unless something new is typed.
    const back = model.takeReturned();
    if (back !== null) {
      setText(now => (now.trim() ? now : back));
    }
  });
  const send = () => {
    if (text.trim() && !model.busy) {
      model.send(text);
      setText('');
    }
  };
  return (
    <div className="jp-aici-composer">
      <textarea
        className="jp-aici-input"
        placeholder="Ask for code to run in the notebook…"
        title="Enter sends · Shift+Enter new line · Escape stops"
        value={text}
        rows={3}
        onChange={ev => setText(ev.target.value)}
        onKeyDown={ev => {
          if (ev.key === 'Enter' && !ev.shiftKey && !ev.nativeEvent.isComposing) {
            ev.preventDefault();
            send();
          }
        }}
      />
      {model.busy ? (
        <Button className="jp-mod-warn jp-aici-stop" title="Stop (Escape)" onClick={() => model.stop()}>
          Stop
        </Button>
      ) : (
        <Button className="jp-mod-accept jp-aici-send" title="Send (Enter)" onClick={send}>
          Send
        </Button>
      )}
    </div>
  );
}

export function ModelPicker(props: { model: ChatModel }): JSX.Element {
  const model = props.model;
  const config = model.config;
  const models = model.models;
  if (!config || models.length === 0) {
    return <span className="jp-aici-model-name">{model.configError ? 'unknown' : '…'}</span>;
  }
  return (
    <HTMLSelect
      className="jp-aici-picker"
      // The full name: a long one (a local model's file name) is cut off in the select.
      title={`${models.find(m => m.name === model.model)?.label ?? model.model ?? ''} — endpoint: ${config.host}`}
      aria-label="Model"
      disabled={model.busy}
      value={model.model ?? ''}
      onChange={ev => (model.model = ev.target.value)}
    >
      {models.map(m => (
        <option key={m.name} value={m.name}>
          {m.label}
        </option>
      ))}
    </HTMLSelect>
  );
}

/** Candidates that must agree: one answer, or K whose results are compared. */
export function CandidatesPicker(props: { model: ChatModel }): JSX.Element {
  const model = props.model;
  return (
    <HTMLSelect
      className="jp-aici-candidates"
      title="Candidates that must agree: each runs and is rolled back, their results are compared, and the largest group's code is applied once; disagreement is shown, never a plain ✓. Auto: two for a question about data on the local model (its prompt cache makes the second cheap), one otherwise"
      aria-label="Candidates"
      disabled={model.busy}
      value={String(model.candidates)}
      onChange={ev =>
        (model.candidates =
          ev.target.value === 'auto' ? 'auto' : Number(ev.target.value))
      }
    >
      {CANDIDATE_CHOICES.map(k => (
        <option key={k} value={String(k)}>
          {k === 'auto'
            ? 'auto'
            : k === 1
              ? 'one answer'
              : `${k} candidates must agree`}
        </option>
      ))}
    </HTMLSelect>
  );
}
