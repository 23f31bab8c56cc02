/**
 * Wiring only: the chat panel in the right sidebar, and the comm that lets
 * ``%%ask`` insert real cells.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';

import { connectNotebooks } from './comm';
import { watchCandidates } from './candidates';
import { FixHandler, FixKind, watchErrors } from './fix';
import { openRunSocket, requestAPI } from './handler';
import { ChatModel } from './model';
import { TrackerBridge } from './notebook';
import { IServerConfig, PLUGIN_ID } from './tokens';
import { watchUndo } from './undo';
import { ChatWidget, Highlighter, MarkdownRenderer } from './widget';

/** The model's text through JupyterLab's Markdown renderer, as untrusted (sanitized) text. */
function markdownRenderer(rendermime: IRenderMimeRegistry): MarkdownRenderer {
  return async (text, host) => {
    const renderer = rendermime.createRenderer('text/markdown');
    try {
      await renderer.renderModel(new MimeModel({ data: { 'text/markdown': text }, trusted: false }));
      host.replaceChildren(...Array.from(renderer.node.childNodes));
    } finally {
      renderer.dispose();
    }
  };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'A chat sidebar that writes, runs and fixes code in the active notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IEditorLanguageRegistry, IRenderMimeRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    languages: IEditorLanguageRegistry | null,
    rendermime: IRenderMimeRegistry | null
  ) => {
    connectNotebooks(tracker);
    let storage: Storage | null = null;
    try {
      storage = window.localStorage;
    } catch {
      // storage disabled: the picker forgets the choice on reload
    }
    const model = new ChatModel(new TrackerBridge(tracker, app.shell), openRunSocket, storage);
    tracker.currentChanged.connect(() => model.refresh());
    const highlight: Highlighter | undefined = languages
      ? (code, el) => languages.highlight(code, languages.findBest('python'), el)
      : undefined;
    const markdown = rendermime ? markdownRenderer(rendermime) : undefined;
    const chat = new ChatWidget(model, { highlight, markdown });
    app.shell.add(chat, 'right', { rank: 900 });
    // The Fix / Explain action: the panel shows the run (opened if hidden, as in Notebook 7).
    const act: FixHandler = (kind, panel, cellId) => {
      app.shell.activateById(chat.id);
      model.fix(kind, panel.context.path, cellId);
    };
    watchErrors(tracker, act);
    watchCandidates(tracker);
    watchUndo(tracker);
    for (const kind of ['fix', 'explain'] as FixKind[]) {
      const command = `jupyter-ai-ci:${kind}-cell`;
      app.commands.addCommand(command, {
        label: kind === 'fix' ? "Fix the active cell's error" : "Explain the active cell's error",
        execute: () => {
          const panel = tracker.currentWidget;
          if (panel) {
            act(kind, panel, panel.content.activeCell?.model.id ?? '');
          }
        }
      });
      app.commands.addKeyBinding({
        command,
        keys: [kind === 'fix' ? 'Alt Shift F' : 'Alt Shift E'],
        selector: '.jp-Notebook'
      });
    }
    requestAPI<IServerConfig>('config')
      .then(config => (model.config = config))
      .catch(reason => {
        console.error('jupyter-ai-ci: server extension not reachable', reason);
        model.configError =
          'The jupyter_ai_ci server extension is not reachable: is it enabled (jupyter server extension list)?';
      });
    void app.restored.then(() => model.refresh());
  }
};

export default plugin;
