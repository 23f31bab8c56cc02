/**
 * Wiring only: the chat panel in the right sidebar, and the comm that lets
 * ``%%ask`` insert real cells.
 */
import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';

import { connectNotebooks } from './comm';
import { openRunSocket, requestAPI } from './handler';
import { ChatModel } from './model';
import { TrackerBridge } from './notebook';
import { IServerConfig, PLUGIN_ID } from './tokens';
import { ChatWidget } from './widget';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'A chat sidebar that writes, runs and fixes code in the active notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ILabShell],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    connectNotebooks(tracker);
    const model = new ChatModel(new TrackerBridge(tracker), openRunSocket);
    tracker.currentChanged.connect(() => model.refresh());
    app.shell.add(new ChatWidget(model), 'right', { rank: 900 });
    requestAPI<IServerConfig>('config')
      .then(config => (model.config = config))
      .catch(reason => console.error('jupyter-ai-ci: server extension not reachable', reason));
  }
};

export default plugin;
