/**
 * Talking to the server extension: REST for settings, a websocket per panel.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

const NAMESPACE = 'jupyter-ai-ci';

/** Call the server extension's REST API (authenticated, XSRF handled). */
export async function requestAPI<T>(
  endPoint = '',
  init: RequestInit = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, NAMESPACE, endPoint);
  const response = await ServerConnection.makeRequest(url, init, settings);
  const text = await response.text();
  const data = text.length > 0 ? JSON.parse(text) : null;
  if (!response.ok) {
    throw new ServerConnection.ResponseError(response, data?.message ?? text);
  }
  return data as T;
}

/** Open the websocket that carries runs, authenticated as the kernels' sockets are. */
export function openRunSocket(): WebSocket {
  const settings = ServerConnection.makeSettings();
  let url = URLExt.join(settings.wsUrl, NAMESPACE, 'run');
  if (settings.appendToken && settings.token) {
    url += `?token=${encodeURIComponent(settings.token)}`;
  }
  return new settings.WebSocket(url);
}
