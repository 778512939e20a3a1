import type { Plan } from '../pipeline/types.js';
import type { Target } from '../providers/index.js';

/**
 * A call to `target` with `model` and `body` (the body the route sends, in
 * place of any the target names), as one literal of a fixed shape: spreading
 * the target into the plan took V8's slow path for every request, about as
 * much CPU as the rest of a small request's planning.
 */
export const planned = (target: Target, model: string | undefined, body: Buffer): Plan => ({ provider: target.provider, location: target.location, path: target.path, model, body });
