/**
 * Wiring only: the chat panel in the right sidebar, and the comm that lets
 * ``%%ask`` insert real cells.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';

import { connectNotebooks } from './comm';
import { openRunSocket, requestAPI } from './handler';
import { ChatModel } from './model';
import { TrackerBridge } from './notebook';
import { IServerConfig, PLUGIN_ID } from './tokens';
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
    app.shell.add(new ChatWidget(model, { highlight, markdown }), 'right', { rank: 900 });
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
