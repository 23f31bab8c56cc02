/**
 * The chat panel: a view of ``ChatModel`` (ReactWidget + UseSignal).
 */
import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import { Button, HTMLSelect, LabIcon } from '@jupyterlab/ui-components';
import React, { useEffect, useLayoutEffect, useRef, useState } from 'react';

import { FixView } from './fixview';
import { CodeBlock, Highlighter, Markdown, MarkdownRenderer, splitFences } from './markdown';
import { CANDIDATE_CHOICES, ChatModel } from './model';
import { Entry, ISessionUsage, PANEL_ID } from './tokens';

export { Highlighter, MarkdownRenderer } from './markdown';

/** How entries render code and Markdown (from JupyterLab's registries when it has them). */
export interface IRenderers {
  highlight?: Highlighter;
  markdown?: MarkdownRenderer;
}

const CHAT_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16">' +
  '<path class="jp-icon3" fill="#616161" d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z' +
  'm3 5v2h10V9H7zm0 4v2h7v-2H7z"/></svg>';

export const chatIcon = new LabIcon({ name: 'jupyter-ai-ci:chat', svgstr: CHAT_SVG });

const SHOWN_REQUEST = 600; // characters of a request shown in the chat

/** The head of a long request, cut after a whole word where there is one near the cut. */
function requestHead(text: string): string {
  const head = text.slice(0, SHOWN_REQUEST);
  const space = head.search(/\s\S*$/);
  return space > SHOWN_REQUEST - 60 ? head.slice(0, space) : head;
}
const RUN_MARKS = { running: '▶', ok: '✓', error: '✗', stopped: '■' };
const RUN_LABELS = {
  running: 'running a cell…',
  ok: 'cell ran',
  error: 'cell raised',
  stopped: 'stopped'
};
/** The same for a fix tried in the kernel, in no cell (the Fix action). */
const TRIED_LABELS = {
  running: 'trying the fix in the kernel…',
  ok: 'ran without error',
  error: 'raised',
  stopped: 'stopped'
};

/** 1234 -> "1.2k", 2500000 -> "2.5M". */
function compact(n: number): string {
  if (n < 1000) {
    return String(n);
  }
  const [div, unit] = n < 1e6 ? [1e3, 'k'] : [1e6, 'M'];
  const v = n / div;
  return `${v < 10 ? v.toFixed(1).replace(/\.0$/, '') : Math.round(v)}${unit}`;
}

function ModelText(props: { text: string; renderers: IRenderers }): JSX.Element {
  const { markdown, highlight } = props.renderers;
  if (!props.text) {
    return <div className="jp-aici-text">…</div>;
  }
  if (markdown) {
    return <Markdown text={props.text} render={markdown} />;
  }
  return (
    <>
      {splitFences(props.text).map((part, i) =>
        part.code ? (
          <CodeBlock key={i} code={part.text} highlight={highlight} />
        ) : (
          <div key={i} className="jp-aici-text">
            {part.text.trim()}
          </div>
        )
      )}
    </>
  );
}

/** A code entry's cell: a thumbnail of the figure it drew (read from the cell) and a link to it. */
function CellLink(props: { entry: Entry; model: ChatModel }): JSX.Element | null {
  const e = props.entry;
  if (e.kind !== 'code' || !e.cellId) {
    return null;
  }
  if (props.model.holds(e) === false) {
    // A failed attempt's cell, replaced by the fix (or deleted): its link did nothing.
    return <div className="jp-aici-cell jp-aici-cell-gone">cell no longer in the notebook</div>;
  }
  const image = props.model.figure(e);
  const go = (ev: React.MouseEvent) => {
    ev.preventDefault();
    props.model.reveal(e);
  };
  return (
    <div className="jp-aici-cell">
      {image && (
        <a href="#" className="jp-aici-figure" title="Show the figure's cell" onClick={go}>
          <img src={image} alt="figure drawn by the cell" />
        </a>
      )}
      <a href="#" className="jp-aici-cell-link" onClick={go}>
        {image ? 'figure in the notebook ↗' : 'show the cell ↗'}
      </a>
    </div>
  );
}

/**
 * What a later model request was shown of an attempt's figures, folded: the picture (for a model
 * that takes images) and the words the model read.
 */
function ShownFigures(props: { entry: Entry; model: ChatModel }): JSX.Element | null {
  const e = props.entry;
  if (e.kind !== 'code' || !e.shown?.length) {
    return null;
  }
  const pictures = e.shown.filter(f => f.picture).length;
  const n = e.shown.length;
  return (
    <details className="jp-aici-shown">
      <summary>
        {n === 1 ? 'the figure' : `${n} figures`} the model was {pictures ? 'shown' : 'told about'}
      </summary>
      {e.shown.map((f, i) => {
        const image = f.picture ? props.model.shownPicture(e, i) : null;
        return (
          <div key={i} className="jp-aici-shown-figure">
            {f.picture &&
              (image ? (
                <>
                  <div className="jp-aici-shown-label">The picture the model was sent:</div>
                  <img className="jp-aici-shown-picture" src={image} alt="the picture the model was sent" />
                </>
              ) : (
                <div className="jp-aici-cell-gone">the model was sent its picture (no longer in the notebook)</div>
              ))}
            {f.text && (
              <>
                <div className="jp-aici-shown-label">What the model was told about the figure:</div>
                <pre className="jp-aici-shown-text">{f.text}</pre>
              </>
            )}
          </div>
        );
      })}
    </details>
  );
}

function EntryView(props: {
  entry: Entry;
  model: ChatModel;
  renderers: IRenderers;
  /** The conversation's last entry (only it offers "Regenerate"). */
  last?: boolean;
}): JSX.Element {
  const e = props.entry;
  switch (e.kind) {
    case 'user':
      // A pasted page of data would fill the chat: its head, and how much more was sent.
      return (
        <div className="jp-aici-entry jp-aici-user">
          {e.text.length > SHOWN_REQUEST ? (
            <>
              {requestHead(e.text)}
              <span className="jp-aici-more"> … and {e.text.length - requestHead(e.text).length} more characters</span>
            </>
          ) : (
            e.text
          )}
        </div>
      );
    case 'model':
      return (
        <div className="jp-aici-entry jp-aici-model">
          {e.purpose === 'fix' && <div className="jp-aici-label">fix</div>}
          {e.purpose === 'again' && <div className="jp-aici-label">asked again for code</div>}
          {e.purpose === 'candidate' && <div className="jp-aici-label">another candidate</div>}
          <ModelText text={e.text} renderers={props.renderers} />
        </div>
      );
    case 'code':
      return (
        <div className={`jp-aici-entry jp-aici-run jp-aici-run-${e.status}`} title={e.code}>
          <span className="jp-aici-mark">{RUN_MARKS[e.status]}</span> attempt {e.attempt}:{' '}
          {e.failedCheck ? 'cell ran, but failed the check' : (e.tried ? TRIED_LABELS : RUN_LABELS)[e.status]}
          {e.error && <div className="jp-aici-error-line">{e.error}</div>}
          <CellLink entry={e} model={props.model} />
          <ShownFigures entry={e} model={props.model} />
        </div>
      );
    case 'notice':
      return <div className="jp-aici-entry jp-aici-notice">{e.text}</div>;
    case 'done':
      return (
        <div className={`jp-aici-entry jp-aici-done jp-aici-status-${e.status}${e.unsure ? ' jp-aici-unsure' : ''}`}>
          {e.text}
          {e.tokens && (
            // The line above already says the total: this one splits it.
            <div
              className="jp-aici-msg-usage"
              title={`This request: ${e.tokens.prompt} prompt + ${e.tokens.completion} completion tokens`}
            >
              {compact(e.tokens.prompt)} in · {compact(e.tokens.completion)} out
            </div>
          )}
          {e.others && (
            <div className="jp-aici-others">
              {e.others.map(o => (
                <details key={o.candidate} className="jp-aici-other">
                  <summary>
                    other result: <b>{o.shown}</b> ({o.count} candidate{o.count === 1 ? '' : 's'})
                    {props.last && !props.model.busy && (
                      <Button minimal className="jp-aici-use"
                        title={`Apply candidate ${o.candidate}'s code instead: it runs once, no model call, and replaces the cells above`}
                        onClick={ev => {
                          ev.preventDefault();
                          props.model.use(e, o.candidate);
                        }}
                      >
                        Use this one
                      </Button>
                    )}
                  </summary>
                  <CodeBlock code={o.code} highlight={props.renderers.highlight} />
                </details>
              ))}
            </div>
          )}
          {e.undo && !e.undone && !props.model.busy && (
            <div className="jp-aici-undoline">
              <Button minimal className="jp-aici-undo"
                disabled={props.model.undoing(e)}
                title={
                  "Undo this request: the kernel's variables, environment and files go back to before it, " +
                  'and the cells it inserted are taken out'
                }
                onClick={() => props.model.undo(e)}
              >
                {props.model.undoing(e) ? 'Undoing…' : 'Undo'}
              </Button>
            </div>
          )}
          {e.replayed && (
            <div className="jp-aici-replayed">
              {e.replayed.live
                ? 'replayed, then the model was asked for a fix'
                : 'replayed (no model request)'}
              {props.last && !props.model.busy && (
                <Button minimal className="jp-aici-regenerate"
                  title="Ask the model again instead of reusing the recorded answer"
                  onClick={() => props.model.regenerate(e)}
                >
                  Regenerate
                </Button>
              )}
            </div>
          )}
        </div>
      );
    case 'error':
      return <div className="jp-aici-entry jp-aici-error">{e.text}</div>;
    case 'fix':
      return <FixView entry={e} model={props.model} />;
    case 'approval':
      return (
        <div className="jp-aici-entry jp-aici-approval">
          <div className="jp-aici-label">
            {e.pictures ? 'send a picture?' : 'approval needed'}
          </div>
          <div className="jp-aici-reason">{e.reason}</div>
          {e.code ? (
            <CodeBlock code={e.code} highlight={props.renderers.highlight} />
          ) : null}
          {e.decision ? (
            <div className="jp-aici-decision">
              {e.decision === 'ended'
                ? `not answered: the run ended first, ${e.pictures ? 'nothing was sent' : 'nothing ran'}`
                : e.pictures
                  ? e.decision === 'approved'
                    ? // What was sent is said where it went: the figure the model was shown, below.
                      'allowed: pictures may go to this endpoint (asked once, until the server restarts)'
                    : 'not allowed: figures go to this endpoint in words only'
                  : e.decision}
            </div>
          ) : (
            <div>
              <Button className="jp-mod-accept" onClick={() => props.model.decide(e.id, true)}>
                {e.pictures ? 'Send' : 'Approve'}
              </Button>
              <Button className="jp-mod-reject" onClick={() => props.model.decide(e.id, false)}>
                {e.pictures ? "Don't send" : 'Reject'}
              </Button>
            </div>
          )}
        </div>
      );
  }
}

function Composer(props: { model: ChatModel }): JSX.Element {
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

function UsageLine(props: { usage: ISessionUsage | null }): JSX.Element | null {
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

function ModelPicker(props: { model: ChatModel }): JSX.Element {
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
function CandidatesPicker(props: { model: ChatModel }): JSX.Element {
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

/** Keep the newest message in view while it streams, unless the user scrolled up to read. */
function useFollow(): React.RefObject<HTMLDivElement> {
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) {
      return;
    }
    const follow = () => {
      el.scrollTop = el.scrollHeight;
    };
    let atEnd = true;
    const onScroll = () => (atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 40);
    // Markdown renders after React does: follow the content's size, not only renders.
    const observer = new MutationObserver(() => atEnd && follow());
    observer.observe(el, { childList: true, subtree: true, characterData: true });
    el.addEventListener('scroll', onScroll);
    follow();
    return () => {
      observer.disconnect();
      el.removeEventListener('scroll', onScroll);
    };
  }, []);
  return ref;
}

function ChatView(props: { model: ChatModel; renderers: IRenderers }): JSX.Element {
  const model = props.model;
  const config = model.config;
  const entries = useFollow();
  return (
    <div
      className="jp-aici-chat"
      onKeyDown={ev => {
        if (ev.key === 'Escape' && model.busy) {
          ev.preventDefault();
          model.stop();
        }
      }}
    >
      <div className="jp-aici-header">
        <label className="jp-aici-model-row">
          Model: <ModelPicker model={model} />
          {config && !config.configured && <span> (no endpoint configured)</span>}
        </label>
        <label className="jp-aici-model-row">
          Check: <CandidatesPicker model={model} />
        </label>
        <div className="jp-aici-notebook">Notebook: {model.notebookName ?? 'none open'}</div>
        {model.configError && <div className="jp-aici-error">{model.configError}</div>}
        <Button minimal className="jp-aici-new"
          title="Start a new conversation: earlier requests are forgotten"
          disabled={model.busy}
          onClick={() => model.clear()}
        >
          New chat
        </Button>
      </div>
      <div className="jp-aici-entries" ref={entries}>
        {model.entries.map((entry, i) => (
          <EntryView
            key={i}
            entry={entry}
            model={model}
            renderers={props.renderers}
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
    private readonly renderers: IRenderers = {}
  ) {
    super();
    this.id = PANEL_ID;
    this.addClass('jp-aici-panel');
    this.title.icon = chatIcon;
    this.title.caption = 'AI code interpreter';
  }

  render(): JSX.Element {
    return (
      <UseSignal signal={this.model.changed}>
        {() => <ChatView model={this.model} renderers={this.renderers} />}
      </UseSignal>
    );
  }
}
