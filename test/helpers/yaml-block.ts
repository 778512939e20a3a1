/**
 * A reader for the block-style YAML subset deploy/ is written in (maps, lists,
 * plain and quoted scalars, comments), so the compose file and configs can be
 * checked without a YAML dependency. Flow collections, anchors and multi-line
 * scalars are refused rather than misread; every scalar stays a string.
 */
export type Yaml = string | null | Yaml[] | { [key: string]: Yaml };

interface Line {
  indent: number;
  text: string;
  number: number;
}

/** Drops a ` #` comment outside quotes. */
function stripComment(text: string): string {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || text[i - 1] === ' ')) return text.slice(0, i).trimEnd();
  }
  return text;
}

function scalar(raw: string, line: Line): string | null {
  const text = raw.trim();
  if (/^[[{&*|>!]/.test(text)) throw new Error(`line ${line.number}: outside the block subset: ${text}`);
  if (text === '' || text === '~' || text === 'null') return null;
  const quoted = /^"(.*)"$/.exec(text) ?? /^'(.*)'$/.exec(text);
  return quoted ? (quoted[1] as string) : text;
}

const MAP_ENTRY = /^([A-Za-z0-9_.$-]+|"[^"]*"):(?:\s+(.*))?$/;

function block(lines: Line[], at: number, indent: number): [Yaml, number] {
  const first = lines[at];
  if (!first) return [null, at];
  return first.text === '-' || first.text.startsWith('- ') ? list(lines, at, indent) : map(lines, at, indent);
}

function list(lines: Line[], at: number, indent: number): [Yaml, number] {
  const out: Yaml[] = [];
  let i = at;
  while (i < lines.length && lines[i]!.indent === indent && (lines[i]!.text === '-' || lines[i]!.text.startsWith('- '))) {
    const line = lines[i]!;
    const rest = line.text.slice(1).trimStart();
    if (rest === '') {
      const [value, next] = block(lines, i + 1, lines[i + 1]?.indent ?? indent + 2);
      out.push(value);
      i = next;
    } else if (MAP_ENTRY.test(rest)) {
      // `- key: value` opens a map whose further keys line up with `key`
      const inner = indent + (line.text.length - rest.length);
      lines[i] = { ...line, indent: inner, text: rest };
      const [value, next] = map(lines, i, inner);
      out.push(value);
      i = next;
    } else {
      out.push(scalar(rest, line));
      i++;
    }
  }
  return [out, i];
}

function map(lines: Line[], at: number, indent: number): [Yaml, number] {
  const out: Record<string, Yaml> = {};
  let i = at;
  while (i < lines.length && lines[i]!.indent === indent && !lines[i]!.text.startsWith('- ')) {
    const line = lines[i]!;
    const m = MAP_ENTRY.exec(line.text);
    if (!m) throw new Error(`line ${line.number}: expected "key: value": ${line.text}`);
    const key = (m[1] as string).replace(/^"(.*)"$/, '$1');
    if (key in out) throw new Error(`line ${line.number}: key ${key} given twice`);
    const next = lines[i + 1];
    if (m[2] !== undefined && m[2] !== '') {
      out[key] = scalar(m[2], line);
      i++;
    } else if (next && (next.indent > indent || (next.indent === indent && next.text.startsWith('- ')))) {
      [out[key], i] = block(lines, i + 1, next.indent);
    } else {
      out[key] = null;
      i++;
    }
  }
  if (i < lines.length && lines[i]!.indent > indent) throw new Error(`line ${lines[i]!.number}: unexpected indentation`);
  return [out, i];
}

export function parseBlockYaml(text: string): Yaml {
  const lines: Line[] = [];
  text.split('\n').forEach((raw, n) => {
    if (raw.includes('\t')) throw new Error(`line ${n + 1}: a tab`);
    const body = stripComment(raw).trimEnd();
    if (body.trim() === '' || body.trim() === '---') return;
    lines.push({ indent: body.length - body.trimStart().length, text: body.trim(), number: n + 1 });
  });
  const [value, end] = block(lines, 0, lines[0]?.indent ?? 0);
  if (end < lines.length) throw new Error(`line ${lines[end]!.number}: not read (bad indentation?)`);
  return value;
}
