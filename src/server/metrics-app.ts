import type { HttpResponse, us_listen_socket } from 'uWebSockets.js';
import type { Logger } from '../telemetry/log.js';
import { closeApp, listenOn, portRefusal, type Uws } from './uws.js';

export interface MetricsSource {
  contentType: string;
  metrics(): Promise<string>;
}

export interface MetricsApp {
  port: number;
  close(): void;
}

/**
 * GW_METRICS_PORT: a second, tiny uWS app answering only `GET /metrics`, so
 * scrapes can stay on an internal port while the main one hides /metrics
 * (GW_METRICS_PUBLIC=0). It serves no gateway route and counts in no metric.
 */
export function startMetricsApp(uws: Uws, host: string, port: number, source: MetricsSource, log: Logger): Promise<MetricsApp> {
  const app = uws.App();
  app.get('/metrics', (res: HttpResponse) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    source.metrics().then(
      (text) => {
        if (aborted) return;
        res.cork(() => {
          res.writeStatus('200 OK').writeHeader('content-type', source.contentType).end(text);
        });
      },
      (err: unknown) => {
        log.error({ err }, 'metrics scrape failed');
        if (!aborted) res.cork(() => res.writeStatus('500 Internal Server Error').end());
      },
    );
  });
  app.any('/*', (res: HttpResponse) => {
    res.writeStatus('404 Not Found').end();
  });
  return new Promise((resolve, reject) => {
    listenOn(app, host, port, false, (socket: us_listen_socket | false) => {
      if (!socket) return reject(new Error(`metrics: ${portRefusal(host, port)}`));
      resolve({ port: uws.us_socket_local_port(socket), close: () => closeApp(app) });
    });
  });
}
