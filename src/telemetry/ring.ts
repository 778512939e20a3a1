/** One finished request, as kept in the per-process ring of recent requests. */
export interface InspectorRow {
  request_id: string;
  ts: string;
  tenant_id: string;
  key_id: string;
  endpoint: string;
  provider: string;
  model: string | null;
  routed_model: string | null;
  route_reason: string | null;
  cache: 'hit' | 'miss' | 'off' | 'bypass';
  tokens_in: number;
  tokens_out: number;
  tokens_saved: number;
  cost_usd: number;
  /** the reply reported no usage: tokens and cost are the gateway's own count (a stream without a usage event) */
  usage_estimated: boolean;
  status: number;
  latency_ms: number;
  prompt_preview: string;
  /** each skill stage that ran: its arm and outcome */
  skills: Record<string, { arm: string | null; outcome: string }>;
  /** why the call was relayed directly (direct_passthrough), else null */
  error_detail: string | null;
}

/** The last `size` requests of this process, oldest overwritten first. */
export class InspectorRing {
  private readonly rows: Array<InspectorRow | undefined>;
  private next = 0;

  constructor(private readonly size = 100) {
    this.rows = new Array<InspectorRow | undefined>(size);
  }

  push(row: InspectorRow): void {
    this.rows[this.next] = row;
    this.next = (this.next + 1) % this.size;
  }

  /** newest first */
  list(filter: (row: InspectorRow) => boolean = () => true, limit = this.size): InspectorRow[] {
    const out: InspectorRow[] = [];
    for (let i = 1; i <= this.size && out.length < limit; i++) {
      const row = this.rows[(this.next - i + this.size) % this.size];
      if (row && filter(row)) out.push(row);
    }
    return out;
  }

  find(requestId: string): InspectorRow | undefined {
    return this.rows.find((r) => r?.request_id === requestId);
  }
}
