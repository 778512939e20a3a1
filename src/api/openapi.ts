import type { TSchema } from '@sinclair/typebox';
import type { Route } from '../http/types.js';
import { ExecuteSchema } from '../surfaces/execute-schema.js';
import { SURFACES } from '../surfaces/index.js';
import { DevKeyInput, OrgInput, RevokeInput } from '../tenancy/admin.js';
import { FeedbackBody } from './scorecard.js';
import { ModelAccessBody, SpendCapBody, VendorKeyCreateBody, VendorKeyDeleteBody } from './self-service.js';
import { LifecycleBody, SkillsBody } from './skills.js';

/** Who may call a route; each maps to the document's security requirements. */
type Auth = 'none' | 'admin' | 'org' | 'entitled' | 'dev_key';

/** A query parameter the route reads: name, what it is, whether required. */
type Query = [name: string, description: string, required?: boolean];

interface Operation {
  summary: string;
  tag: string;
  auth: Auth;
  /** the TypeBox schema the handler validates its JSON body with */
  body?: TSchema;
  query?: Query[];
  /** a vendor-compatible route: described by the vendor's own API reference, no body schema here */
  vendor?: { api: string; url: string };
}

const OPENAI_CHAT = { api: 'OpenAI Chat Completions', url: 'https://platform.openai.com/docs/api-reference/chat' };
const OPENAI_RESPONSES = { api: 'OpenAI Responses', url: 'https://platform.openai.com/docs/api-reference/responses' };
const AZURE_RESPONSES = { api: 'Azure OpenAI Responses', url: 'https://learn.microsoft.com/azure/ai-foundry/openai/how-to/responses' };
const ANTHROPIC_MESSAGES = { api: 'Anthropic Messages', url: 'https://docs.anthropic.com/en/api/messages' };
const BEDROCK_CONVERSE = { api: 'Amazon Bedrock Converse', url: 'https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html' };
const BEDROCK_CONVERSE_STREAM = { api: 'Amazon Bedrock ConverseStream', url: 'https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html' };

/** A vendor-compatible route: a developer key, and the vendor's API reference instead of a body schema. */
const relay = (summary: string, vendor: Operation['vendor']): Operation => ({ summary, tag: 'relay', auth: 'dev_key', vendor });

const TELEMETRY_FILTERS: Query[] = [
  ['tenant_id', 'a sub-tenant of the credential\'s org, or the tenant a deployment secret names'],
  ['limit', 'rows to return'],
];
const WINDOW: Query = ['window', 'look-back window: 15m, 1h, 24h, 7d or 30d'];

/**
 * Every route the gateway serves, keyed `METHOD path` as src/main.ts registers
 * it: the one table /openapi.json is generated from. A registered route missing
 * here stops the start (openApiDocument), so the document cannot fall behind.
 */
export const OPERATIONS: Readonly<Record<string, Operation>> = {
  'GET /healthz': { summary: 'Liveness, levers and overload figures of the answering replica', tag: 'public', auth: 'none' },
  'GET /livez': { summary: 'Liveness probe: 200 while the process answers', tag: 'public', auth: 'none' },
  'GET /readyz': { summary: 'Readiness probe: 200 ready; 503 while draining on SIGTERM or shedding load', tag: 'public', auth: 'none' },
  'GET /v1/models': { summary: 'The catalog models the gateway can serve now', tag: 'public', auth: 'none' },
  'GET /metrics': { summary: 'Prometheus metrics of the answering replica (unless GW_METRICS_PUBLIC=0)', tag: 'public', auth: 'none' },
  'GET /openapi.json': { summary: 'This document', tag: 'public', auth: 'none' },
  'GET /console': { summary: 'The web console (HTML); it signs in with a developer key and reads the routes of this document', tag: 'console', auth: 'none' },
  'GET /console/:file': { summary: 'One of the console\'s fixed static files (modules, stylesheet, icon); any other name is 404', tag: 'console', auth: 'none' },
  'POST /api/v1/admin/orgs': { summary: 'Create an org or sub-tenant (200 when it exists with the same fields)', tag: 'admin', auth: 'admin', body: OrgInput },
  'GET /api/v1/admin/orgs': { summary: 'List every org', tag: 'admin', auth: 'admin' },
  'POST /api/v1/admin/dev_keys': { summary: 'Issue a developer key; the secret is in this answer only', tag: 'admin', auth: 'admin', body: DevKeyInput },
  'GET /api/v1/admin/dev_keys': { summary: 'List an org\'s developer keys (no secrets, no hashes)', tag: 'admin', auth: 'admin', query: [['org_id', 'the org', true]] },
  'POST /api/v1/admin/dev_keys/revoke': { summary: 'Revoke a developer key by key_id or dev_key_id', tag: 'admin', auth: 'admin', body: RevokeInput },
  'POST /api/v1/vendor_key/create': { summary: 'Store a provider key for the org, sealed', tag: 'self-service', auth: 'org', body: VendorKeyCreateBody },
  'POST /api/v1/vendor_key/delete': { summary: 'Remove a stored provider key', tag: 'self-service', auth: 'org', body: VendorKeyDeleteBody },
  'POST /api/v1/spend_cap/update': { summary: 'Set or remove the org\'s real-time spend cap', tag: 'self-service', auth: 'org', body: SpendCapBody },
  'POST /api/v1/model_access/update': { summary: 'Set which catalog models the org may call (null: all)', tag: 'self-service', auth: 'org', body: ModelAccessBody },
  'GET /api/v1/settings': { summary: 'The org\'s configuration; secrets only as hints', tag: 'self-service', auth: 'org', query: [['tenant_id', 'a sub-tenant of the key\'s org']] },
  'POST /api/v1/dev_key/skills': { summary: 'Store a key\'s skill flags, modes, locks and params', tag: 'skills', auth: 'entitled', body: SkillsBody },
  'POST /api/v1/tenant/:org_id/skills/:skill_id/lifecycle': { summary: 'Move one skill of one key to a mode and record the transition', tag: 'lifecycle', auth: 'entitled', body: LifecycleBody },
  'GET /api/v1/tenant/:org_id/skills/:skill_id/scorecard': {
    summary: 'One skill\'s treatment against control over a window, with its status and breakers',
    tag: 'scorecard',
    auth: 'entitled',
    query: [WINDOW, ['key_id', 'one key of the tenant (key_id or dev_key_id)']],
  },
  'POST /v1/feedback': { summary: 'File a task\'s outcome by session or task id', tag: 'feedback', auth: 'dev_key', body: FeedbackBody },
  'GET /api/v1/requests': { summary: 'The answering replica\'s recent requests (inspector feed)', tag: 'telemetry', auth: 'entitled', query: TELEMETRY_FILTERS },
  'GET /api/v1/logs/request/:request_id': { summary: 'One request\'s own log lines, from the answering replica', tag: 'telemetry', auth: 'entitled', query: TELEMETRY_FILTERS.slice(0, 1) },
  'GET /api/v1/tenant/requests': {
    summary: 'Durable request rows, newest first (Redis); dimensions filter by equality',
    tag: 'telemetry',
    auth: 'entitled',
    query: [...TELEMETRY_FILTERS, WINDOW, ['cursor', 'the next_cursor of the previous page']],
  },
  'GET /api/v1/tenant/request/:request_id': { summary: 'One request\'s durable row and decision record (Redis)', tag: 'telemetry', auth: 'entitled', query: TELEMETRY_FILTERS.slice(0, 1) },
  'GET /api/v1/usage': {
    summary: 'Requests, cost and tokens grouped by dimensions and time buckets (Redis); other dimensions filter by equality',
    tag: 'telemetry',
    auth: 'entitled',
    query: [...TELEMETRY_FILTERS, WINDOW, ['group_by', 'comma-separated dimensions (default provider)'], ['bucket', 'hour, day or week']],
  },
  'POST /v1/execute': { summary: 'The native route: one model call with per-request skill overrides', tag: 'execute', auth: 'dev_key', body: ExecuteSchema },
  'POST /v1/chat/completions': relay('OpenAI chat completions, translated for non-OpenAI models', OPENAI_CHAT),
  'POST /v1/responses': relay('OpenAI Responses, relayed', OPENAI_RESPONSES),
  'POST /cloudx/compat/v1/responses': relay('Responses on an Azure OpenAI resource (/openai/v1/responses)', AZURE_RESPONSES),
  'POST /compat/v1/responses': relay('Responses on an Azure OpenAI resource (/openai/v1/responses)', AZURE_RESPONSES),
  'POST /cloudx/compat/openai/v1/responses': relay('Responses on an Azure OpenAI resource (/openai/v1/responses)', AZURE_RESPONSES),
  'POST /cloudx/compat/responses': relay('Responses on an Azure OpenAI resource (/openai/responses)', AZURE_RESPONSES),
  'POST /cloudx/compat/openai/responses': relay('Responses on an Azure OpenAI resource (/openai/responses)', AZURE_RESPONSES),
  'POST /cloudx/compat/*': relay('Any other Azure OpenAI path (the part after /cloudx/compat, with its query), relayed as sent', { api: 'Azure OpenAI REST', url: 'https://learn.microsoft.com/azure/ai-foundry/openai/reference' }),
  'POST /msgvendor/v1/messages': relay('Anthropic Messages, on Anthropic or on Vertex', ANTHROPIC_MESSAGES),
  'POST /msgvendor/v1/messages/count_tokens': relay('Anthropic token counting', { api: 'Anthropic Count Message tokens', url: 'https://docs.anthropic.com/en/api/messages-count-tokens' }),
  'POST /v1/messages': relay('Parity relay: the exact bytes to Anthropic Messages', ANTHROPIC_MESSAGES),
  'POST /genvendor/v1beta/models/:model': relay('Gemini generate content: {model} is `<model>:generateContent` or `<model>:streamGenerateContent`', { api: 'Gemini generateContent', url: 'https://ai.google.dev/api/generate-content' }),
  'POST /cloudy/converse': relay('Bedrock Converse, modelId in the body', BEDROCK_CONVERSE),
  'POST /cloudy/converse-stream': relay('Bedrock ConverseStream, modelId in the body', BEDROCK_CONVERSE_STREAM),
  'POST /cloudy/model/:modelId/converse': relay('Bedrock Converse, modelId in the path', BEDROCK_CONVERSE),
  'POST /cloudy/model/:modelId/converse-stream': relay('Bedrock ConverseStream, modelId in the path', BEDROCK_CONVERSE_STREAM),
};

/** A route path as OpenAPI writes it: `:name` as `{name}`, a trailing `*` as `{vendor_path}`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\*$/, '{vendor_path}');

const SECURITY: Record<Auth, Array<Record<string, string[]>>> = {
  none: [],
  admin: [{ bearer: [] }, { adminKeyHeader: [] }],
  org: [{ bearer: [] }],
  dev_key: [{ bearer: [] }],
  entitled: [{ bearer: [] }, { configSecretHeader: [] }, { adminKeyHeader: [] }],
};

const AUTH_TEXT: Record<Auth, string> = {
  none: 'No credential.',
  admin: 'The deployment admin key (GW_ADMIN_KEY) as a bearer token or x-gw-admin-key.',
  org: 'A developer key of the org (or an identity-provider token mapped to it).',
  dev_key: 'A developer key.',
  entitled: 'A developer key or identity-provider token of the org, or the deployment config secret or admin key naming the tenant.',
};

/** `{error:{message,type,code}}`: every error the gateway's own routes answer. */
const ERROR = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'code'],
      properties: { message: { type: 'string' }, type: { type: 'string', description: 'the error type (docs/errors.md)' }, code: { type: 'integer', description: 'the HTTP status' } },
    },
  },
};

/** The JSON Schema of a TypeBox schema: TypeBox keeps its own bookkeeping under symbols, which JSON leaves out. */
const jsonSchema = (schema: TSchema): unknown => JSON.parse(JSON.stringify(schema));

function operation(method: string, path: string, op: Operation): Record<string, unknown> {
  const pathParams = [...path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  if (path.endsWith('*')) pathParams.push({ name: 'vendor_path', in: 'path', required: true, schema: { type: 'string' } });
  const queryParams = (op.query ?? []).map(([name, description, required]) => ({ name, in: 'query', required: required === true, description, schema: { type: 'string' } }));
  const parameters = [...pathParams, ...queryParams];
  const description = [AUTH_TEXT[op.auth], op.vendor ? `Request and reply follow ${op.vendor.api} (see externalDocs); the gateway adds its own x-gw-* headers.` : undefined].filter(Boolean).join(' ');
  return {
    operationId: `${method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: op.summary,
    description,
    tags: [op.tag],
    security: SECURITY[op.auth],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(op.body) } } } } : {}),
    ...(op.vendor ? { externalDocs: { description: op.vendor.api, url: op.vendor.url } } : {}),
    responses: {
      '200': { description: op.vendor ? `as ${op.vendor.api}` : 'success' },
      default: { description: 'an error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    },
  };
}

/**
 * The OpenAPI 3.1 document of the routes given (those the gateway registered),
 * from OPERATIONS. A route without an entry throws, naming it: the start stops
 * rather than serve a document that leaves a route out.
 */
export function openApiDocument(routes: ReadonlyArray<Pick<Route, 'method' | 'path'>>): Record<string, unknown> {
  const served = [...routes, { method: 'GET', path: '/openapi.json' }];
  const missing = served.map((r) => `${r.method} ${r.path}`).filter((k) => OPERATIONS[k] === undefined);
  if (missing.length > 0) throw new Error(`src/api/openapi.ts: no OPERATIONS entry for ${missing.join(', ')}`);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const { method, path } of served) {
    (paths[openApiPath(path)] ??= {})[method.toLowerCase()] = operation(method, path, OPERATIONS[`${method} ${path}`] as Operation);
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Model gateway', version: 'v1', description: 'The gateway\'s own routes; vendor-compatible routes refer to the vendor\'s API reference.' },
    paths,
    components: {
      schemas: { Error: ERROR },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'a developer key, an identity-provider token, or the admin key on admin routes' },
        adminKeyHeader: { type: 'apiKey', in: 'header', name: 'x-gw-admin-key' },
        configSecretHeader: { type: 'apiKey', in: 'header', name: 'x-gw-config-secret' },
      },
    },
  };
}

/** GET /openapi.json: the document, serialized once. */
export function openApiRoutes(document: Record<string, unknown>): Route[] {
  const body = JSON.stringify(document);
  return [
    {
      method: 'GET',
      path: '/openapi.json',
      surface: SURFACES.public,
      handler(_req, res) {
        res.send(200, [['content-type', 'application/json']], body);
      },
    },
  ];
}
