const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** `body` is not a JSON object this peek can read: parse it instead */
export const NOT_PEEKABLE = Symbol('not peekable');

const isSpace = (c: number | undefined): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** index of the quote closing the string that opens at `open`, or -1 */
function closingQuote(body: Buffer, open: number): number {
  for (let j = body.indexOf(QUOTE, open + 1); j !== -1; j = body.indexOf(QUOTE, j + 1)) {
    let slashes = 0;
    for (let k = j - 1; body[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return j;
  }
  return -1;
}

/**
 * The string value of a top-level `key` of a JSON object body, without
 * parsing the whole document: string contents (nearly all of a prompt's
 * bytes) are skipped with native searches, and only the structure between
 * them is walked. Like JSON.parse, the last occurrence wins. Returns
 * undefined when the key is absent or not a string, and NOT_PEEKABLE for
 * anything this walk does not vouch for (not an object, broken strings, an
 * escaped value), where the caller parses the body properly.
 */
export function peekTopLevelString(body: Buffer, key: string): string | undefined | typeof NOT_PEEKABLE {
  const want = Buffer.from(key);
  let i = 0;
  while (isSpace(body[i])) i++;
  if (body[i] !== 0x7b) return NOT_PEEKABLE;
  let depth = 0;
  let keyNext = false;
  let found: string | undefined;
  for (; i < body.length; i++) {
    const c = body[i];
    if (c === QUOTE) {
      const end = closingQuote(body, i);
      if (end === -1) return NOT_PEEKABLE;
      if (depth === 1 && keyNext) {
        keyNext = false;
        // an escaped key may spell `key` in a way these bytes do not: let the parser decide
        if (body.subarray(i + 1, end).includes(BACKSLASH)) return NOT_PEEKABLE;
        if (end - i - 1 === want.length && body.compare(want, 0, want.length, i + 1, end) === 0) {
          let v = end + 1;
          while (isSpace(body[v])) v++;
          if (body[v] !== 0x3a) return NOT_PEEKABLE;
          v++;
          while (isSpace(body[v])) v++;
          if (body[v] === QUOTE) {
            const close = closingQuote(body, v);
            if (close === -1) return NOT_PEEKABLE;
            const raw = body.subarray(v + 1, close);
            if (raw.includes(BACKSLASH)) return NOT_PEEKABLE;
            found = raw.toString('utf8');
            i = close;
            continue;
          }
          found = undefined;
        }
      }
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth === 1) keyNext = true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) break;
    } else if (c === 0x2c && depth === 1) {
      keyNext = true;
    }
  }
  return depth === 0 ? found : NOT_PEEKABLE;
}
