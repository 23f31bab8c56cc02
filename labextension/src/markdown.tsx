/**
 * The model's text as people expect to read it: Markdown rendered by
 * JupyterLab's own renderer (sanitized, as untrusted text; code highlighted
 * with the editor's languages), code blocks that wrap in a narrow panel, each
 * with a copy button.  Without a renderer (an app that provides none), prose
 * stays text and fenced code is shown highlighted.
 */
import { Clipboard } from '@jupyterlab/apputils';
import { Button } from '@jupyterlab/ui-components';
import React, { useEffect, useRef } from 'react';

/** Renders Markdown ``text`` into ``host``, replacing what it held. */
export type MarkdownRenderer = (text: string, host: HTMLElement) => Promise<void>;

/** Puts highlighted ``code`` into ``el`` (JupyterLab's CodeMirror languages). */
export type Highlighter = (code: string, el: HTMLElement) => Promise<void>;

/** While text streams in, render at most this often (milliseconds). */
const STREAM_RENDER_MS = 150;

/** A copy button for ``code`` (the text of a code block). */
function copyButton(code: () => string): HTMLButtonElement {
  const button = document.createElement('button');
  button.className = 'jp-Button jp-mod-minimal jp-aici-copy';
  button.type = 'button';
  button.title = 'Copy the code';
  button.textContent = 'Copy';
  button.addEventListener('click', () => {
    Clipboard.copyToSystem(code());
    button.textContent = 'Copied';
    window.setTimeout(() => (button.textContent = 'Copy'), 1500);
  });
  return button;
}

/** Give each rendered code block the panel's wrapping style and a copy button. */
export function decorateCodeBlocks(host: HTMLElement): void {
  for (const pre of Array.from(host.querySelectorAll('pre'))) {
    if (pre.parentElement?.classList.contains('jp-aici-codewrap')) {
      continue;
    }
    const wrap = document.createElement('div');
    wrap.className = 'jp-aici-codewrap';
    pre.classList.add('jp-aici-codeblock');
    pre.replaceWith(wrap);
    wrap.append(pre, copyButton(() => pre.textContent ?? ''));
  }
}

/** Markdown, rendered at once, then at most every STREAM_RENDER_MS while the text streams in. */
export function Markdown(props: { text: string; render: MarkdownRenderer }): JSX.Element {
  const ref = useRef<HTMLDivElement>(null);
  const state = useRef({ latest: '', shown: null as string | null, busy: false, timer: 0 });
  const render = props.render;
  useEffect(() => {
    const s = state.current;
    s.latest = props.text;
    const run = async (): Promise<void> => {
      s.timer = 0;
      const host = ref.current;
      const text = s.latest;
      if (!host || text === s.shown) {
        return;
      }
      s.busy = true;
      try {
        const next = document.createElement('div');
        await render(text, next);
        decorateCodeBlocks(next);
        host.replaceChildren(...Array.from(next.childNodes));
      } catch {
        host.textContent = text; // never lose the text
      } finally {
        s.busy = false;
        s.shown = text;
      }
      if (s.latest !== text) {
        s.timer = window.setTimeout(() => void run(), STREAM_RENDER_MS);
      }
    };
    // A render under way or scheduled picks up the newest text when it is done.
    if (!s.busy && !s.timer) {
      s.timer = window.setTimeout(() => void run(), s.shown === null ? 0 : STREAM_RENDER_MS);
    }
  }, [props.text, render]);
  useEffect(() => () => window.clearTimeout(state.current.timer), []);
  return <div ref={ref} className="jp-aici-md jp-RenderedHTMLCommon jp-RenderedMarkdown" />;
}

/** One highlighted code block with a copy button (approvals; the fallback without Markdown). */
export function CodeBlock(props: { code: string; highlight?: Highlighter }): JSX.Element {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (el && props.highlight) {
      el.textContent = '';
      props.highlight(props.code, el).catch(() => (el.textContent = props.code));
    }
  }, [props.code, props.highlight]);
  return (
    <div className="jp-aici-codewrap">
      <pre className="jp-aici-codeblock cm-s-jupyter">
        <code ref={ref}>{props.highlight ? null : props.code}</code>
      </pre>
      <Button
        type="button"
        minimal
        className="jp-aici-copy"
        title="Copy the code"
        onClick={ev => {
          Clipboard.copyToSystem(props.code);
          const button = ev.currentTarget;
          button.textContent = 'Copied';
          window.setTimeout(() => (button.textContent = 'Copy'), 1500);
        }}
      >
        Copy
      </Button>
    </div>
  );
}

const FENCE = /```[^\n`]*\n([\s\S]*?)(?:\n```|$)/g;

/** Prose and fenced code of a model's message, in order (the fallback without Markdown). */
export function splitFences(text: string): { code: boolean; text: string }[] {
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
