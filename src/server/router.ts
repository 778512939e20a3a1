import type { Route } from '../http/types.js';

interface PatternRoute {
  route: Route;
  regex: RegExp;
  names: string[];
}

export type RouteMatch =
  | { kind: 'found'; route: Route; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allowed: string[] }
  | { kind: 'not_found' };

/** Exact paths resolve through one Map lookup; patterns are tried in table order. */
export class Router {
  private readonly exact = new Map<string, Route>();
  private readonly exactPaths = new Map<string, string[]>();
  private readonly patterns: PatternRoute[] = [];

  constructor(routes: Route[]) {
    for (const route of routes) {
      if (!route.path.includes(':') && !route.path.endsWith('*')) {
        this.exact.set(`${route.method} ${route.path}`, route);
        const methods = this.exactPaths.get(route.path) ?? [];
        methods.push(route.method);
        this.exactPaths.set(route.path, methods);
        continue;
      }
      const names: string[] = [];
      const source = route.path
        .split('/')
        .map((seg) => {
          if (seg === '*') {
            names.push('*');
            return '(.*)';
          }
          // `:name` matches up to the next `/`, so `/models/:model` takes `gemini-2.5-pro:generateContent` whole
          return seg.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:([A-Za-z_]+)/g, (_m, n: string) => {
            names.push(n);
            return '([^/]+)';
          });
        })
        .join('/');
      this.patterns.push({ route, regex: new RegExp(`^${source}$`), names });
    }
  }

  match(method: string, path: string): RouteMatch {
    const hit = this.exact.get(`${method} ${path}`);
    if (hit) return { kind: 'found', route: hit, params: {} };
    const allowed = new Set(this.exactPaths.get(path) ?? []);
    for (const p of this.patterns) {
      const m = p.regex.exec(path);
      if (!m) continue;
      if (p.route.method !== method) {
        allowed.add(p.route.method);
        continue;
      }
      const params: Record<string, string> = {};
      p.names.forEach((n, i) => (params[n] = m[i + 1] ?? ''));
      return { kind: 'found', route: p.route, params };
    }
    return allowed.size > 0 ? { kind: 'method_not_allowed', allowed: [...allowed] } : { kind: 'not_found' };
  }
}
