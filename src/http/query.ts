/** One parameter of a raw query string, decoded; undefined when absent or not decodable. */
export function queryParam(query: string, name: string): string | undefined {
  if (query === '') return undefined;
  for (const part of query.split('&')) {
    const eq = part.indexOf('=');
    const k = eq === -1 ? part : part.slice(0, eq);
    if (k === name) {
      try {
        return decodeURIComponent((eq === -1 ? '' : part.slice(eq + 1)).replace(/\+/g, ' '));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}
