/**
 * The chat panel: a view of ``ChatModel`` (ReactWidget + UseSignal).
 *
 * This module lays the panel out (header, entries, request box, usage line) and keeps the
 * newest entry in view; ``entry.tsx`` draws the entries and ``controls.tsx`` the inputs.
 */
import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import { Button, LabIcon } from '@jupyterlab/ui-components';
import React, { useLayoutEffect, useRef } from 'react';

import { CandidatesPicker, Composer, ModelPicker } from './controls';
import { EntryView, IRenderers } from './entry';
import { ChatModel } from './model';
import { PANEL_ID } from './tokens';
import { UsageLine } from './usage';

export { IRenderers } from './entry';
export { Highlighter, MarkdownRenderer } from './markdown';

const CHAT_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16">' +
  '<path class="jp-icon3" fill="#616161" d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z' +
  'm3 5v2h10V9H7zm0 4v2h7v-2H7z"/></svg>';

export const chatIcon = new LabIcon({ name: 'jupyter-ai-ci:chat', svgstr: CHAT_SVG });

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
