import { countTokens } from 'gpt-tokenizer';

/** special-token text in a prompt is counted as plain text, never refused */
const ANY_TEXT = { disallowedSpecial: new Set<string>() };

/** Tokens of a prompt text by the o200k tokenizer: the skills' one estimate, whatever the vendor. */
export const textTokens = (s: string): number => countTokens(s, ANY_TEXT);
