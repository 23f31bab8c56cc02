/**
 * Wiring only: the chat panel in the right sidebar, and the comm that lets
 * ``%%ask`` insert real cells.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker } from '@jupyterlab/notebook';

import { connectNotebooks } from './comm';
import { openRunSocket, requestAPI } from './handler';
import { ChatModel } from './model';
import { TrackerBridge } from './notebook';
import { IServerConfig, PLUGIN_ID } from './tokens';
import { ChatWidget, Highlighter } from './widget';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'A chat sidebar that writes, runs and fixes code in the active notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IEditorLanguageRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    languages: IEditorLanguageRegistry | null
  ) => {
    connectNotebooks(tracker);
    const model = new ChatModel(new TrackerBridge(tracker), openRunSocket);
    tracker.currentChanged.connect(() => model.refresh());
    const highlight: Highlighter | undefined = languages
      ? (code, el) => languages.highlight(code, languages.findBest('python'), el)
      : undefined;
    app.shell.add(new ChatWidget(model, highlight), 'right', { rank: 900 });
    requestAPI<IServerConfig>('config')
      .then(config => (model.config = config))
      .catch(reason => {
        console.error('jupyter-ai-ci: server extension not reachable', reason);
        model.configError =
          'The jupyter_ai_ci server extension is not reachable: is it enabled (jupyter server extension list)?';
      });
  }
};

export default plugin;
