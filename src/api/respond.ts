import type { HeaderList, ResponseSink } from '../http/types.js';

const JSON_HEADERS: HeaderList = [['content-type', 'application/json']];

export function sendJson(res: ResponseSink, status: number, body: unknown, headers: HeaderList = []): void {
  res.send(status, headers.length === 0 ? JSON_HEADERS : [...JSON_HEADERS, ...headers], JSON.stringify(body));
}
