/**
 * Prompt-cache usage scripted by the model name: a name ending in
 * `-cache_<read>_<written>` (after a catalog name, so the call is priced as
 * that model: `gpt-4o-cache_3000_0`) answers with a usage saying that many
 * prompt tokens were read from and written to the vendor's prompt cache, on
 * PLAIN_TOKENS tokens of plain input. Each fake reports it in its own wire
 * shape.
 */

export const PLAIN_TOKENS = 500;

export interface CacheScript {
  plain: number;
  read: number;
  written: number;
}

export function cacheScriptOf(model: string): CacheScript | undefined {
  const m = /-cache_(\d+)_(\d+)$/.exec(model);
  return m ? { plain: PLAIN_TOKENS, read: Number(m[1]), written: Number(m[2]) } : undefined;
}
