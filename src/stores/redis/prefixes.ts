/** Every Redis key and channel the gateway uses, in one place. */
export const PREFIX = 'gw:';
export const docKey = (collection: string): string => `${PREFIX}doc:${collection}`;
export const DOC_CHANNEL = `${PREFIX}doc-changes`;
