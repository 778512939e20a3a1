/**
 * What a new operator sees on a first start: a gateway with no org refuses
 * every call, so it says, once, how to get one.
 */

/** The start-up hint for a deployment with no orgs yet, or undefined once it has one. */
export function firstRunHint(orgCount: number, adminKeySet: boolean): string | undefined {
  if (orgCount > 0) return undefined;
  const steps = [
    ...(adminKeySet ? [] : ['set GW_ADMIN_KEY (16 characters or more) and restart']),
    'npm run admin -- orgs create acme          (with GW_ADMIN_KEY and GW_URL in the environment)',
    'npm run admin -- keys create acme          (prints the developer key once)',
  ];
  return `no orgs yet: every call will be refused until one has a key. ${steps.map((s, i) => `${i + 1}. ${s}`).join('  ')}  Or try GW_DEV=1 for a demo org and key in front of local fake vendors.`;
}
