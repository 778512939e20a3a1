import type { StageInput, StageResult } from '../src/skills/stage.js';

/** The least a real shadow stage does: parse the chat body and look at its messages. */
export function parseAndCount(input: StageInput): StageResult {
  const body = input.json() as { messages?: unknown[] };
  return { outcome: 'miss', detail: { messages: body.messages?.length ?? 0 } };
}
