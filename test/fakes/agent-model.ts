import { summaryHeader } from '../../src/skills/trajectory/summary.js';
import { completion, toolCallCompletion, type DeclaredTool } from './openai.js';
import { sendJson, startFakeVendor, type FakeVendor } from './server.js';

/**
 * A fake OpenAI chat-completions model at work on an agent's task, whose work
 * degrades when the gateway folded its context: the fold's summary is in the
 * prompt, and the tool results it took in are clipped. Behaviour by model:
 * - `agent-tools`: calls the first declared tool; its arguments fit the
 *   declared schema, unless its context was folded: then each required
 *   property gets a value of the wrong type
 * - `agent-loop`: answers; when its context was folded it has lost its place
 *   and asks to read a file again (a tool call), so the agent takes more turns
 * - `agent-answer`: answers `ANSWER: <v>` when a `SECRET=<v>` line is in its
 *   context in full and it has at most MAX_RESULTS tool results to look
 *   through (in a longer history it gets lost); else `ANSWER: unknown`
 * - `agent-error`: 500 when its context was folded
 * anything else: a plain completion.
 * Usage counts the prompt as about one token per 4 characters of its
 * messages, none read from the prompt cache: a fold's ledger is trued up
 * against a prompt of the conversation's size.
 */

/** tool results the `agent-answer` model can look through before it gets lost */
export const MAX_RESULTS = 10;

const FOLD_MARK = summaryHeader(0, 0).split(':')[0] as string;

interface Message {
  role: string;
  content?: unknown;
}

const text = (m: Message): string => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));

const readAgain = (model: string) => ({
  ...completion(model),
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'call_again', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/module0.ts"}' } }] },
      logprobs: null,
      finish_reason: 'tool_calls',
    },
  ],
});

/** the reply with usage for a prompt of `messages` */
function promptUsage<R extends { usage: { completion_tokens: number } }>(reply: R, messages: Message[]): R {
  const prompt = Math.ceil(JSON.stringify(messages).length / 4);
  const completionTokens = reply.usage.completion_tokens;
  return { ...reply, usage: { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens, prompt_tokens_details: { cached_tokens: 0 } } };
}

export function startAgentModel(): Promise<FakeVendor> {
  return startFakeVendor((req, res) => {
    const body = JSON.parse(req.body.toString('utf8')) as { model: string; messages: Message[]; tools?: DeclaredTool[] };
    const { model, messages } = body;
    const folded = messages.some((m) => text(m).includes(FOLD_MARK));
    const answer = (reply: { usage: { completion_tokens: number } }) => sendJson(res, 200, promptUsage(reply, messages));
    switch (model) {
      case 'agent-tools':
        return answer(body.tools?.[0] ? toolCallCompletion(model, body.tools[0], !folded) : completion(model));
      case 'agent-loop':
        return answer(folded ? readAgain(model) : completion(model, 'Done: the budget is computed in src/retry.ts.'));
      case 'agent-answer': {
        const results = messages.filter((m) => m.role === 'tool');
        const secret = results.length <= MAX_RESULTS ? /SECRET=(\w+)/.exec(messages.map(text).join('\n'))?.[1] : undefined;
        return answer(completion(model, `ANSWER: ${secret ?? 'unknown'}`));
      }
      case 'agent-error':
        return folded ? sendJson(res, 500, { error: { message: 'the model failed', type: 'server_error', param: null, code: null } }) : answer(completion(model));
      default:
        return answer(completion(model));
    }
  });
}
