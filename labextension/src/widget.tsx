/**
 * The chat panel: a view of ``ChatModel`` (ReactWidget + UseSignal).
 */
import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useRef, useState } from 'react';

import { ChatModel } from './model';
import { Entry, ISessionUsage, PANEL_ID } from './tokens';

const CHAT_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16">' +
  '<path class="jp-icon3" fill="#616161" d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z' +
  'm3 5v2h10V9H7zm0 4v2h7v-2H7z"/></svg>';

export const chatIcon = new LabIcon({ name: 'jupyter-ai-ci:chat', svgstr: CHAT_SVG });

/** Puts highlighted ``code`` into ``el`` (JupyterLab's CodeMirror languages). */
export type Highlighter = (code: string, el: HTMLElement) => Promise<void>;

const FENCE = /```[^\n`]*\n([\s\S]*?)(?:\n```|$)/g;

/** Prose and fenced code of a model's message, in order. */
function splitFences(text: string): { code: boolean; text: string }[] {
  const parts: { code: boolean; text: string }[] = [];
  let last = 0;
  for (const m of text.matchAll(FENCE)) {
    if (m.index! > last) {
      parts.push({ code: false, text: text.slice(last, m.index) });
    }
    parts.push({ code: true, text: m[1] });
    last = m.index! + m[0].length;
  }
  if (last < text.length) {
    parts.push({ code: false, text: text.slice(last) });
  }
  return parts.filter(p => p.code || p.text.trim());
}

function CodeBlock(props: { code: string; highlight?: Highlighter }): JSX.Element {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (el && props.highlight) {
      el.textContent = '';
      props.highlight(props.code, el).catch(() => (el.textContent = props.code));
    }
  }, [props.code, props.highlight]);
  return (
    <pre className="jp-aici-codeblock cm-s-jupyter">
      <code ref={ref}>{props.highlight ? null : props.code}</code>
    </pre>
  );
}

const RUN_MARKS = { running: '▶', ok: '✓', error: '✗', stopped: '■' };
const RUN_LABELS = {
  running: 'running a cell…',
  ok: 'cell ran',
  error: 'cell raised',
  stopped: 'stopped'
};

function EntryView(props: {
  entry: Entry;
  model: ChatModel;
  highlight?: Highlighter;
  /** The conversation's last entry (only it offers "Regenerate"). */
  last?: boolean;
}): JSX.Element {
  const e = props.entry;
  switch (e.kind) {
    case 'user':
      return <div className="jp-aici-entry jp-aici-user">{e.text}</div>;
    case 'model':
      return (
        <div className="jp-aici-entry jp-aici-model">
          {e.purpose === 'fix' && <div className="jp-aici-label">fix</div>}
          {e.text ? (
            splitFences(e.text).map((part, i) =>
              part.code ? (
                <CodeBlock key={i} code={part.text} highlight={props.highlight} />
              ) : (
                <div key={i} className="jp-aici-text">
                  {part.text.trim()}
                </div>
              )
            )
          ) : (
            <div className="jp-aici-text">…</div>
          )}
        </div>
      );
    case 'code':
      return (
        <div className={`jp-aici-entry jp-aici-run jp-aici-run-${e.status}`} title={e.code}>
          <span className="jp-aici-mark">{RUN_MARKS[e.status]}</span> attempt {e.attempt}:{' '}
          {RUN_LABELS[e.status]}
          {e.error && <div className="jp-aici-error-line">{e.error}</div>}
        </div>
      );
    case 'notice':
      return <div className="jp-aici-entry jp-aici-notice">{e.text}</div>;
    case 'done':
      return (
        <div className={`jp-aici-entry jp-aici-done jp-aici-status-${e.status}`}>
          {e.text}
          {e.replayed && (
            <div className="jp-aici-replayed" style={{ color: 'var(--jp-ui-font-color2)' }}>
              {e.replayed.live
                ? 'replayed, then the model was asked for a fix'
                : 'replayed (no model request)'}
              {props.last && !props.model.busy && (
                <button
                  className="jp-Button jp-mod-minimal jp-aici-regenerate"
                  title="Ask the model again instead of reusing the recorded answer"
                  style={{ marginLeft: 6 }}
                  onClick={() => props.model.regenerate(e)}
                >
                  Regenerate
                </button>
              )}
            </div>
          )}
        </div>
      );
    case 'error':
      return <div className="jp-aici-entry jp-aici-error">{e.text}</div>;
    case 'approval':
      return (
        <div className="jp-aici-entry jp-aici-approval">
          <div className="jp-aici-label">approval needed</div>
          <div className="jp-aici-reason">{e.reason}</div>
          <CodeBlock code={e.code} highlight={props.highlight} />
          {e.decision ? (
            <div className="jp-aici-decision">{e.decision}</div>
          ) : (
            <div>
              <button className="jp-Button jp-mod-accept" onClick={() => props.model.decide(e.id, true)}>
                Approve
              </button>
              <button className="jp-Button jp-mod-reject" onClick={() => props.model.decide(e.id, false)}>
                Reject
              </button>
            </div>
          )}
        </div>
      );
  }
}

function Composer(props: { model: ChatModel }): JSX.Element {
  const [text, setText] = useState('');
  const model = props.model;
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
        placeholder="Ask for code to run in the notebook… (Enter sends)"
        value={text}
        rows={3}
        onChange={ev => setText(ev.target.value)}
        onKeyDown={ev => {
          if (ev.key === 'Enter' && !ev.shiftKey) {
            ev.preventDefault();
            send();
          }
        }}
      />
      {model.busy ? (
        <button className="jp-Button jp-mod-warn jp-aici-stop" onClick={() => model.stop()}>
          Stop
        </button>
      ) : (
        <button className="jp-Button jp-mod-accept jp-aici-send" onClick={send}>
          Send
        </button>
      )}
    </div>
  );
}

/** 1234 -> "1.2k", 2500000 -> "2.5M". */
function compact(n: number): string {
  if (n < 1000) {
    return String(n);
  }
  const [div, unit] = n < 1e6 ? [1e3, 'k'] : [1e6, 'M'];
  const v = n / div;
  return `${v < 10 ? v.toFixed(1).replace(/\.0$/, '') : Math.round(v)}${unit}`;
}

function UsageLine(props: { usage: ISessionUsage | null }): JSX.Element | null {
  const u = props.usage;
  if (!u) {
    return null;
  }
  const tokens = u.prompt + u.completion;
  return (
    <div
      className="jp-aici-usage"
      title={`This panel's session: ${u.requests} model request(s), ${u.prompt} prompt + ${u.completion} completion tokens`}
      style={{
        padding: '0 8px 4px',
        fontSize: 'var(--jp-ui-font-size0)',
        color: 'var(--jp-ui-font-color2)'
      }}
    >
      session: {u.requests} {u.requests === 1 ? 'request' : 'requests'} · {compact(tokens)}{' '}
      {tokens === 1 ? 'token' : 'tokens'}
    </div>
  );
}

function ChatView(props: { model: ChatModel; highlight?: Highlighter }): JSX.Element {
  const model = props.model;
  const config = model.config;
  return (
    <div className="jp-aici-chat">
      <div className="jp-aici-header">
        <div className="jp-aici-model-name" title={config ? `endpoint: ${config.host}` : ''}>
          Model: {config ? config.model : model.configError ? 'unknown' : '…'}
          {config && !config.configured && ' (no endpoint configured)'}
        </div>
        <div className="jp-aici-notebook">Notebook: {model.notebookName ?? 'none open'}</div>
        {model.configError && <div className="jp-aici-error">{model.configError}</div>}
        <button
          className="jp-Button jp-mod-minimal jp-aici-new"
          title="Start a new conversation: earlier requests are forgotten"
          disabled={model.busy}
          onClick={() => model.clear()}
        >
          New chat
        </button>
      </div>
      <div className="jp-aici-entries">
        {model.entries.map((entry, i) => (
          <EntryView
            key={i}
            entry={entry}
            model={model}
            highlight={props.highlight}
            last={i === model.entries.length - 1}
          />
        ))}
      </div>
      <Composer model={model} />
      <UsageLine usage={model.usage} />
    </div>
  );
}

export class ChatWidget extends ReactWidget {
  constructor(
    readonly model: ChatModel,
    private readonly highlight?: Highlighter
  ) {
    super();
    this.id = PANEL_ID;
    this.addClass('jp-aici-panel');
    this.title.icon = chatIcon;
    this.title.caption = 'AI code interpreter';
  }

  render(): JSX.Element {
    return (
      <UseSignal signal={this.model.changed}>{() => <ChatView model={this.model} highlight={this.highlight} />}</UseSignal>
    );
  }
}
