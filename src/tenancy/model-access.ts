import { GatewayError } from '../errors.js';
import { lookupModel } from '../providers/catalog.js';
import type { DocStore } from '../stores/types.js';

/** An org's access list, in the `org_policy` collection under `model_access:<org_id>`. */
interface ModelAccessDoc {
  org_id: string;
  /** catalog ids enabled for the org; null = every catalog model */
  models: string[] | null;
  updated_at: string;
}

const PREFIX = 'model_access:';
const docId = (orgId: string) => `${PREFIX}${orgId}`;

/**
 * Which models an org may call. Enforced as a policy stage: a model not
 * enabled is 403 model_not_in_scope (src/policy/model-access.ts) on every surface that names a model. A
 * model is matched by its catalog id, so a dated or regional variant
 * (`gpt-4o-2024-08-06`, `us.anthropic…`) follows its base model; a name the
 * catalog does not know is never enabled by a list. Sets are built once per
 * org and dropped when any replica changes the list.
 */
export class ModelAccess {
  private readonly enabled = new Map<string, ReadonlySet<string> | null>();

  constructor(private readonly store: DocStore) {
    store.onChange((collection, id) => {
      if (collection === 'org_policy' && id.startsWith(PREFIX)) this.enabled.delete(id.slice(PREFIX.length));
    });
  }

  /** catalog ids enabled for the org, or null when every catalog model is */
  models(orgId: string): readonly string[] | null {
    return this.store.get<ModelAccessDoc>('org_policy', docId(orgId))?.models ?? null;
  }

  /** null enables every catalog model */
  async set(orgId: string, models: string[] | null): Promise<void> {
    await this.store.put('org_policy', docId(orgId), { org_id: orgId, models, updated_at: new Date().toISOString() } satisfies ModelAccessDoc);
  }

  /** 403 model_not_in_scope unless the org may call `model` (a call naming none is not checked) */
  check(orgId: string, model: string | undefined): void {
    if (model === undefined) return;
    const allowed = this.allowedFor(orgId);
    if (allowed === null || allowed.has(model)) return;
    const entry = lookupModel(model);
    if (entry !== undefined && allowed.has(entry.id)) return;
    // a LoRA adapter is allowed with its base model
    if (entry?.base_model !== undefined && allowed.has(entry.base_model)) return;
    throw new GatewayError('model_not_in_scope', `model ${model} is not enabled for org ${orgId}; enable it with /api/v1/model_access/update`);
  }

  private allowedFor(orgId: string): ReadonlySet<string> | null {
    let set = this.enabled.get(orgId);
    if (set === undefined) {
      const models = this.models(orgId);
      set = models === null ? null : new Set(models);
      this.enabled.set(orgId, set);
    }
    return set;
  }
}
