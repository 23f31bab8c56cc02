/**
 * One chat entry as the panel draws it: the request, the model's text, a cell that ran, a
 * notice, the last line with its buttons (Use this one, Undo, Regenerate), an error, a fix,
 * an approval.  Apart from ``widget.tsx`` (the panel around the entries), so each kind's
 * markup and words are in one place.
 */
import { Button } from '@jupyterlab/ui-components';
import React from 'react';

import { CellLink, ShownFigures } from './cellview';
import { FixView } from './fixview';
import { CodeBlock, Highlighter, Markdown, MarkdownRenderer, splitFences } from './markdown';
import { ChatModel } from './model';
import { Entry } from './tokens';
import { compact } from './usage';

/** How entries render code and Markdown (from JupyterLab's registries when it has them). */
export interface IRenderers {
  highlight?: Highlighter;
  markdown?: MarkdownRenderer;
}

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

export function EntryView(props: {
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
