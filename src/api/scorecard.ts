import { Type } from '@sinclair/typebox';
import { GatewayError } from '../errors.js';
import type { Route } from '../http/types.js';
import { compileSchema, parseJsonObject } from '../http/validate.js';
import { queryParam } from '../http/query.js';
import type { FeedbackStore } from '../lifecycle/feedback.js';
import { feedbackKey } from '../lifecycle/samples.js';
import { DEFAULT_WINDOW, isWindow, WINDOWS, type Scorecards } from '../lifecycle/scorecards.js';
import { SURFACES } from '../surfaces/index.js';
import { namedTenants, type Entitlement } from '../tenancy/entitlement.js';
import { isPerKeySkill, PER_KEY_SKILLS } from '../tenancy/skills.js';
import { sendJson } from './respond.js';

const surface = SURFACES.api;
const Id = Type.String({ minLength: 1, maxLength: 256 });
export const FeedbackBody = Type.Object(
  {
    session_id: Type.Optional(Id),
    task_id: Type.Optional(Id),
    outcome: Type.Union([Type.Literal('success'), Type.Literal('failure')]),
  },
  { additionalProperties: false },
);
const parseFeedback = compileSchema(FeedbackBody);

/**
 * The skill scorecard (docs/api.md, Scorecard) and task feedback (Feedback).
 * The scorecard follows the skill routes' entitlement rule: the org's own key,
 * an IdP token of the org, or the deployment's config secret or admin key
 * naming the tenant; a key_id is resolved and checked against the tenant
 * before anything says whether it exists.
 */
export function scorecardRoutes(entitlement: Entitlement, scorecards: Scorecards, feedback: FeedbackStore): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/v1/tenant/:org_id/skills/:skill_id/scorecard',
      surface,
      async handler(req, res) {
        const principal = await entitlement.identify(req, { deploymentSecrets: true });
        const tenant = entitlement.tenant(principal, namedTenants(req));
        res.meta.tenant = tenant.org_id;
        const skill = req.params['skill_id'] ?? '';
        if (!isPerKeySkill(skill)) {
          throw new GatewayError('request_error', `skill ${skill} is not a per-key skill; per-key skills: ${PER_KEY_SKILLS.join(', ')}`, { fields: { field: 'skill_id' } });
        }
        const window = queryParam(req.query, 'window') ?? DEFAULT_WINDOW;
        if (!isWindow(window)) throw new GatewayError('request_error', `window: must be one of ${Object.keys(WINDOWS).join(', ')}`, { fields: { field: 'window' } });
        const keyRef = queryParam(req.query, 'key_id');
        const key = keyRef === undefined ? undefined : entitlement.key(tenant, keyRef).key;
        req.stages.begin('store_read');
        const scorecard = await scorecards.read(tenant, skill, window, key);
        req.stages.end();
        sendJson(res, 200, scorecard);
      },
    },
    {
      method: 'POST',
      path: '/v1/feedback',
      surface,
      async handler(req, res) {
        const principal = await entitlement.identify(req, { deploymentSecrets: false });
        if (principal.kind !== 'dev_key') throw new GatewayError('invalid_developer_key', 'feedback is filed with a developer key');
        const org = principal.caller.org;
        res.meta.tenant = org.org_id;
        const body = parseFeedback(parseJsonObject(req.body));
        if (body.session_id === undefined && body.task_id === undefined) {
          throw new GatewayError('request_error', 'session_id or task_id: one is required', { fields: { field: 'session_id' } });
        }
        req.stages.begin('store_write');
        const ids = [...(body.task_id !== undefined ? [feedbackKey('task', body.task_id)] : []), ...(body.session_id !== undefined ? [feedbackKey('session', body.session_id)] : [])];
        try {
          for (const id of ids) await feedback.record(org.org_id, id, body.outcome);
        } catch (err) {
          throw new GatewayError('store_timeout', `the feedback store did not take the outcome: ${(err as Error).message}`, { cause: err });
        }
        req.stages.end();
        sendJson(res, 200, { status: 'success', tenant_id: org.org_id, ...(body.task_id !== undefined && { task_id: body.task_id }), ...(body.session_id !== undefined && { session_id: body.session_id }), outcome: body.outcome });
      },
    },
  ];
}
