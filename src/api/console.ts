import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../errors.js';
import type { GatewayRequest, HeaderList, ResponseSink, Route } from '../http/types.js';
import { SURFACES } from '../surfaces/index.js';

const JS = 'text/javascript; charset=utf-8';

/**
 * Every file of the web console (src/console/), with its content type. Only
 * these are served: a name is looked up here, never joined to a path, so no
 * request can reach another file.
 */
export const CONSOLE_FILES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  'icon.svg': 'image/svg+xml',
  'app.js': JS,
  'api.js': JS,
  'dom.js': JS,
  'chart.js': JS,
  'usage.js': JS,
  'requests.js': JS,
  'skills.js': JS,
  'settings.js': JS,
};

/**
 * The console runs its own modules and stylesheet and talks to this origin
 * only: no inline script or style, no other origin, no frames, no form posts
 * (a form the script failed to catch must not put the key in a URL).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: HeaderList = [
  ['content-security-policy', CONSOLE_CSP],
  ['x-content-type-options', 'nosniff'],
  ['referrer-policy', 'no-referrer'],
  ['x-frame-options', 'DENY'],
  ['cross-origin-opener-policy', 'same-origin'],
  ['cross-origin-resource-policy', 'same-origin'],
];

/** where the files are next to this module: src/console/ from src/api/, dist/src/console/ from dist/src/api/ */
const CONSOLE_DIR = new URL('../console/', import.meta.url);

interface Asset {
  body: Buffer;
  etag: string;
  headers: HeaderList;
}

/**
 * Reads the console's files once, at start: a missing one stops the start,
 * naming it. Names are not versioned (there is no build step), so a browser
 * revalidates every file (`no-cache`) and gets 304 while its ETag matches.
 */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const [name, type] of Object.entries(CONSOLE_FILES)) {
    const body = readFileSync(fileURLToPath(new URL(name, CONSOLE_DIR)));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { body, etag, headers: [['content-type', type], ['cache-control', 'no-cache'], ['etag', etag], ...SECURITY_HEADERS] });
  }
  return assets;
}

function serve(asset: Asset | undefined, req: GatewayRequest, res: ResponseSink): void {
  if (!asset) throw new GatewayError('not_found', `no console file ${req.params['file']?.slice(0, 100) ?? ''}`);
  // a strong ETag: an If-None-Match list naming it, or `*`, means the browser's copy is current
  const wanted = req.headers['if-none-match'];
  const current = wanted !== undefined && (wanted.trim() === '*' || wanted.split(',').some((t) => t.trim() === asset.etag));
  if (current) res.send(304, asset.headers.filter(([k]) => k !== 'content-type'), '');
  else res.send(200, asset.headers, asset.body);
}

/**
 * GET /console (the page) and GET /console/{file} (its modules, stylesheet
 * and icon): static files any browser may load. The page itself reads the
 * gateway's documented routes with the developer key it is given, so it can
 * show nothing that key may not read.
 */
export function consoleRoutes(): Route[] {
  const assets = loadAssets();
  const surface = SURFACES.public;
  return [
    { method: 'GET', path: '/console', surface, handler: (req, res) => serve(assets.get('index.html'), req, res) },
    { method: 'GET', path: '/console/:file', surface, handler: (req, res) => serve(assets.get(req.params['file'] ?? ''), req, res) },
  ];
}
