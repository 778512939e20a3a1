import { Type, type Static } from '@sinclair/typebox';
import { compileSchema } from '../http/validate.js';
import { PROVIDER_IDS } from '../providers/types.js';

/**
 * The /v1/execute request envelope (input, target, execution, skill_overrides,
 * metadata). Every object is closed: an unknown field is a 400 naming it, as
 * is a wrong type or a value out of range. `messages`, `tools` and
 * `tool_choice` take the chat-completions shapes.
 */

const Text = Type.String({ maxLength: 256 });
const ModelId = Type.String({ minLength: 1, maxLength: 256 });

const ToolCall = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    type: Type.Literal('function'),
    function: Type.Object({ name: Type.String({ minLength: 1 }), arguments: Type.String() }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);

/** a content part as chat completions takes it; its kinds are checked where the call is translated */
const ContentPart = Type.Object({ type: Type.String({ minLength: 1 }) });

const Message = Type.Object(
  {
    role: Type.Union([Type.Literal('system'), Type.Literal('developer'), Type.Literal('user'), Type.Literal('assistant'), Type.Literal('tool')]),
    content: Type.Optional(Type.Union([Type.String(), Type.Array(ContentPart), Type.Null()])),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    tool_calls: Type.Optional(Type.Array(ToolCall)),
    tool_call_id: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

const Tool = Type.Object(
  {
    type: Type.Literal('function'),
    function: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 64 }),
        description: Type.Optional(Type.String()),
        parameters: Type.Optional(Type.Object({})),
        strict: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const ToolChoice = Type.Union([
  Type.Literal('auto'),
  Type.Literal('none'),
  Type.Literal('required'),
  Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false }) }, { additionalProperties: false }),
]);

export const ExecuteSchema = Type.Object(
  {
    input: Type.Object(
      {
        messages: Type.Array(Message, { minItems: 1 }),
        tools: Type.Optional(Type.Array(Tool, { maxItems: 128 })),
        tool_choice: Type.Optional(ToolChoice),
      },
      { additionalProperties: false },
    ),
    target: Type.Optional(
      Type.Object(
        {
          model: Type.Optional(ModelId),
          provider: Type.Optional(Type.Union(PROVIDER_IDS.map((p) => Type.Literal(p)))),
          fallbacks: Type.Optional(Type.Array(ModelId, { maxItems: 8 })),
        },
        { additionalProperties: false },
      ),
    ),
    execution: Type.Optional(
      Type.Object(
        {
          stream: Type.Optional(Type.Boolean()),
          max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
          temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
          top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
          stop: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 4 })])),
          timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 3_600_000 })),
          reasoning: Type.Optional(
            Type.Object({ effort: Type.Union([Type.Literal('minimal'), Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')]) }, { additionalProperties: false }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    // its pairs are checked by the override parser, which names the skill at fault
    skill_overrides: Type.Optional(Type.Record(Type.String(), Type.String())),
    metadata: Type.Optional(
      Type.Object(
        { session_id: Type.Optional(Text), task_id: Type.Optional(Text), team: Type.Optional(Text), use_case: Type.Optional(Text) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export type ExecuteRequest = Static<typeof ExecuteSchema>;

/** The request envelope, or 400 request_error naming the field (`execution.max_tokens`, `input.messages.0.content`). */
export const parseExecuteRequest = compileSchema(ExecuteSchema);
