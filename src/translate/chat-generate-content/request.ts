import { jsonOf } from '../chat/reply.js';
import { jsonWithArray, TurnWriter, type JsonText } from '../chat/body-writer.js';
import { bad, eachMessage, parsedArguments, readChatCall, systemTexts, THINKING_BUDGET, toolNamesById, type ChatCall, type ChatPart } from '../chat/request.js';
import type { ChatRequest, TranslatedRequest } from '../types.js';

/** Chat completions → Gemini generateContent (genvendor): the request. */

type Part = Record<string, unknown>;

function part(p: ChatPart, field: string): Part {
  if (p.kind === 'text') return { text: p.text };
  if (p.kind === 'image') return { inlineData: { mimeType: p.mediaType, data: p.data } };
  throw bad(field, 'genvendor takes images inline: send a data: URL');
}

/** A tool result as the object functionResponse.response must be: the result's JSON object, or the text under `result`. */
function responseObject(text: string): Record<string, unknown> {
  const v = jsonOf(Buffer.from(text));
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { result: text };
}

/** The conversation's contents, written as each message is read. */
function writeContents(call: ChatCall, out: JsonText): void {
  const names = toolNamesById(call);
  const turns = new TurnWriter<'user' | 'model'>(out, 'parts');
  eachMessage(call, (m, i) => {
    const field = `messages[${i}]`;
    switch (m.role) {
      case 'system':
        return;
      case 'user':
        turns.message('user');
        m.parts.forEach((p, j) => turns.block(part(p, `${field}.content[${j}]`)));
        return;
      case 'assistant':
        turns.message('model');
        m.parts.forEach((p, j) => turns.block(part(p, `${field}.content[${j}]`)));
        m.toolCalls.forEach((c, j) => turns.block({ functionCall: { name: c.name, args: parsedArguments(c, `${field}.tool_calls[${j}].function.arguments`) } }));
        return;
      case 'tool': {
        const name = names.get(m.toolCallId);
        if (name === undefined) throw bad(`${field}.tool_call_id`, `no earlier assistant tool call has id ${JSON.stringify(m.toolCallId)}`);
        turns.message('user');
        turns.block({ functionResponse: { name, response: responseObject(m.text) } });
      }
    }
  });
  turns.end();
}

function toolConfig(call: ChatCall): Record<string, unknown> | undefined {
  const c = call.toolChoice;
  if (!c) return undefined;
  if (c.kind === 'function') return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [c.name] } };
  return { functionCallingConfig: { mode: { auto: 'AUTO', none: 'NONE', required: 'ANY' }[c.kind] } };
}

/** The GenerateContentRequest of a chat-completions call, its contents written as they are read. */
function generateContentBody(call: ChatCall, out: JsonText): Buffer {
  if (!call.parallelToolCalls && call.tools.length > 0) throw bad('parallel_tool_calls', 'genvendor has no switch for parallel tool calls');
  const system = systemTexts(call);
  const tc = toolConfig(call);
  const generation = {
    ...(call.maxTokens !== undefined && { maxOutputTokens: call.maxTokens }),
    ...(call.temperature !== undefined && { temperature: call.temperature }),
    ...(call.topP !== undefined && { topP: call.topP }),
    ...(call.stop.length > 0 && { stopSequences: call.stop }),
    ...(call.reasoningEffort && { thinkingConfig: { includeThoughts: true, thinkingBudget: THINKING_BUDGET[call.reasoningEffort] } }),
  };
  const tail = {
    ...(system.length > 0 && { systemInstruction: { parts: system.map((text) => ({ text })) } }),
    ...(call.tools.length > 0 && {
      tools: [{ functionDeclarations: call.tools.map((t) => ({ name: t.name, ...(t.description !== undefined && { description: t.description }), parametersJsonSchema: t.parameters })) }],
    }),
    ...(tc && { toolConfig: tc }),
    ...(Object.keys(generation).length > 0 && { generationConfig: generation }),
  };
  return jsonWithArray({}, 'contents', (text) => writeContents(call, text), tail, out);
}

/** A chat-completions call as a generateContent call (its provider checks the model name it puts in the path). */
export function chatToGenerateContentRequest(body: ChatRequest, out: JsonText): TranslatedRequest {
  const call = readChatCall(body, 'genvendor');
  const model = call.model.replace(/^models\//, '');
  return {
    operation: { op: 'generate_content', model, stream: call.stream, query: call.stream ? 'alt=sse' : '' },
    body: generateContentBody(call, out),
  };
}
