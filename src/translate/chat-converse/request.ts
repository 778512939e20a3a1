import { jsonWithArray, TurnWriter, type JsonText } from '../chat/body-writer.js';
import { bad, eachMessage, parsedArguments, readChatCall, systemTexts, type ChatCall, type ChatPart } from '../chat/request.js';
import type { ChatRequest, TranslatedRequest } from '../types.js';

/** Chat completions → Bedrock Converse / ConverseStream (cloudy): the request. */

type Block = Record<string, unknown>;

const IMAGE_FORMATS: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

function block(p: ChatPart, field: string): Block {
  if (p.kind === 'text') return { text: p.text };
  if (p.kind === 'image_url') throw bad(field, 'cloudy takes images inline: send a data: URL');
  const format = IMAGE_FORMATS[p.mediaType];
  if (format === undefined) throw bad(field, `cloudy takes png, jpeg, gif or webp images, not ${p.mediaType}`);
  return { image: { format, source: { bytes: p.data } } };
}

/** The conversation's messages, written as each is read. */
function writeMessages(call: ChatCall, out: JsonText): void {
  const turns = new TurnWriter<'user' | 'assistant'>(out, 'content');
  eachMessage(call, (m, i) => {
    const field = `messages[${i}]`;
    switch (m.role) {
      case 'system':
        return;
      case 'user':
        turns.message('user');
        m.parts.forEach((p, j) => turns.block(block(p, `${field}.content[${j}]`)));
        return;
      case 'tool':
        turns.message('user');
        turns.block({ toolResult: { toolUseId: m.toolCallId, content: [{ text: m.text }] } });
        return;
      case 'assistant':
        turns.message('assistant');
        m.parts.forEach((p, j) => turns.block(block(p, `${field}.content[${j}]`)));
        m.toolCalls.forEach((c, j) => turns.block({ toolUse: { toolUseId: c.id, name: c.name, input: parsedArguments(c, `${field}.tool_calls[${j}].function.arguments`) } }));
    }
  });
  turns.end();
}

function toolChoice(call: ChatCall): Block | undefined {
  const c = call.toolChoice;
  if (!c || c.kind === 'auto') return c && { auto: {} };
  if (c.kind === 'required') return { any: {} };
  if (c.kind === 'function') return { tool: { name: c.name } };
  throw bad('tool_choice', 'cloudy has no "none" tool choice: leave the tools out instead');
}

/** The Converse request body of a chat-completions call (the model id rides in the path), its messages written as they are read. */
function converseBody(call: ChatCall, out: JsonText): Buffer {
  if (!call.parallelToolCalls && call.tools.length > 0) throw bad('parallel_tool_calls', 'cloudy has no switch for parallel tool calls');
  if (call.reasoningEffort) throw bad('reasoning_effort', 'not translated to cloudy yet');
  const system = systemTexts(call);
  const choice = toolChoice(call);
  const inference = {
    ...(call.maxTokens !== undefined && { maxTokens: call.maxTokens }),
    ...(call.temperature !== undefined && { temperature: call.temperature }),
    ...(call.topP !== undefined && { topP: call.topP }),
    ...(call.stop.length > 0 && { stopSequences: call.stop }),
  };
  const tail = {
    ...(system.length > 0 && { system: system.map((text) => ({ text })) }),
    ...(Object.keys(inference).length > 0 && { inferenceConfig: inference }),
    ...(call.tools.length > 0 && {
      toolConfig: {
        tools: call.tools.map((t) => ({ toolSpec: { name: t.name, ...(t.description !== undefined && { description: t.description }), inputSchema: { json: t.parameters } } })),
        ...(choice && { toolChoice: choice }),
      },
    }),
  };
  return jsonWithArray({}, 'messages', (text) => writeMessages(call, text), tail, out);
}

/** A chat-completions call as a Converse call (the model id rides in the path its provider builds). */
export function chatToConverseRequest(body: ChatRequest, out: JsonText): TranslatedRequest {
  const call = readChatCall(body, 'cloudy');
  return { operation: { op: 'converse', model: call.model, stream: call.stream }, body: converseBody(call, out) };
}
