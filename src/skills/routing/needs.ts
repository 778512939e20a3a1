import type { StageInput } from '../stage.js';
import { textTokens } from '../tokens.js';
import { isObj, type Json, type MessageView } from '../views/view.js';

/**
 * What a request needs from a model, read from its body whatever the vendor
 * shape: tools, images, reasoning, structured output, its prompt's size and
 * the output it asks room for. model_routing decides on these alone.
 */
export interface RequestNeeds {
  tools: boolean;
  vision: boolean;
  reasoning: boolean;
  /** a JSON schema or JSON mode for the reply */
  structured: boolean;
  /** o200k tokens of the prompt's text parts */
  promptTokens: number;
  /** the output budget the request sets, when it sets one */
  maxOutputTokens: number | undefined;
  /** turns carrying the user's own text */
  userTurns: number;
}

const obj = (v: unknown): Json => (isObj(v) ? v : {});
const nonEmpty = (v: unknown): boolean => Array.isArray(v) && v.length > 0;

/** tool definitions on each shape: chat, responses, messages, generate-content (`tools`), converse (`toolConfig.tools`), native (`input.tools`) */
const declaresTools = (root: Json): boolean => nonEmpty(root['tools']) || nonEmpty(obj(root['toolConfig'])['tools']) || nonEmpty(obj(root['input'])['tools']);

const IMAGE_TYPES = new Set(['image_url', 'input_image', 'image']);

/** an image part anywhere in the conversation: chat/responses/messages typed parts, converse `image` blocks, Gemini inline or file data of an image type */
function hasImage(v: unknown, depth = 0): boolean {
  if (depth > 8) return false;
  if (Array.isArray(v)) return v.some((x) => hasImage(x, depth + 1));
  if (!isObj(v)) return false;
  if (typeof v['type'] === 'string' && IMAGE_TYPES.has(v['type'])) return true;
  if (isObj(v['image'])) return true;
  for (const key of ['inlineData', 'inline_data', 'fileData', 'file_data']) {
    const mime = obj(v[key])['mimeType'] ?? obj(v[key])['mime_type'];
    if (typeof mime === 'string' && mime.startsWith('image/')) return true;
  }
  return Object.values(v).some((x) => typeof x === 'object' && hasImage(x, depth + 1));
}

/** the conversation fields of every shape (not tool definitions, whose schemas may name an `image`) */
const conversation = (root: Json): unknown[] => {
  const input = root['input'];
  // Responses items, or the native envelope's messages (its `input.tools` are definitions)
  const items = Array.isArray(input) ? input : obj(input)['messages'];
  return [root['messages'], items, root['contents'], root['system'], root['systemInstruction']];
};

function asksReasoning(root: Json): boolean {
  if (root['reasoning_effort'] !== undefined || isObj(root['reasoning'])) return true;
  const thinking = obj(root['thinking']);
  if (thinking['type'] !== undefined && thinking['type'] !== 'disabled') return true;
  const gemini = obj(obj(root['generationConfig'])['thinkingConfig']);
  if (typeof gemini['thinkingBudget'] === 'number' ? gemini['thinkingBudget'] !== 0 : gemini['includeThoughts'] === true) return true;
  const converse = obj(root['additionalModelRequestFields']);
  if (converse['thinking'] !== undefined || converse['reasoning_config'] !== undefined) return true;
  return isObj(obj(root['execution'])['reasoning']);
}

function asksStructured(root: Json): boolean {
  const format = (v: unknown) => isObj(v) && v['type'] !== undefined && v['type'] !== 'text';
  if (format(root['response_format']) || format(obj(root['text'])['format']) || root['output_format'] !== undefined) return true;
  const gen = obj(root['generationConfig']);
  return gen['responseSchema'] !== undefined || gen['responseJsonSchema'] !== undefined || gen['responseMimeType'] === 'application/json';
}

const OUTPUT_BUDGET_FIELDS: ReadonlyArray<(root: Json) => unknown> = [
  (r) => r['max_completion_tokens'],
  (r) => r['max_tokens'],
  (r) => r['max_output_tokens'],
  (r) => obj(r['generationConfig'])['maxOutputTokens'],
  (r) => obj(r['inferenceConfig'])['maxTokens'],
  (r) => obj(r['execution'])['max_tokens'],
];

const outputBudget = (root: Json): number | undefined => OUTPUT_BUDGET_FIELDS.map((f) => f(root)).find((v): v is number => typeof v === 'number');

export function requestNeeds(input: StageInput, view: MessageView): RequestNeeds {
  const root = obj(input.json());
  const parts = view.parts();
  return {
    tools: declaresTools(root) || parts.some((p) => p.kind === 'tool_call' || p.kind === 'tool_result'),
    vision: conversation(root).some((v) => hasImage(v)),
    reasoning: asksReasoning(root),
    structured: asksStructured(root),
    promptTokens: parts.reduce((n, p) => n + textTokens(p.text), 0),
    maxOutputTokens: outputBudget(root),
    userTurns: new Set(parts.filter((p) => p.kind === 'user').map((p) => p.turn)).size,
  };
}
