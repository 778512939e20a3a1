export type Plan = 'free' | 'team' | 'enterprise';

export interface Org {
  org_id: string;
  parent_org_id: string | null;
  plan: Plan;
  rps_cap: number;
  created_at: string;
}

export interface DevKey {
  key_id: string;
  dev_key_id: string;
  org_id: string;
  name: string | null;
  /** sha256 of the secret, hex; the secret itself is never stored */
  secret_hash: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

/** The org and developer key a request authenticated as. */
export interface Caller {
  key: DevKey;
  org: Org;
}
