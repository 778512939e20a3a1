import type { RequestLines } from './request-log.js';
import type { DecisionRecord, RequestRow } from './row.js';

/** One finished request as the process keeps it: row, decision, prompt preview and its own log lines. */
export interface RingEntry {
  row: RequestRow;
  decision: DecisionRecord;
  /** the inspector's prompt preview ('' where pii_redaction did not run) */
  preview: string;
  lines: RequestLines | undefined;
}

/** The last `size` requests of this process, oldest overwritten first. */
export class InspectorRing {
  private readonly entries: Array<RingEntry | undefined>;
  private next = 0;

  constructor(private readonly size = 100) {
    this.entries = new Array<RingEntry | undefined>(size);
  }

  push(entry: RingEntry): void {
    this.entries[this.next] = entry;
    this.next = (this.next + 1) % this.size;
  }

  /** newest first */
  list(filter: (entry: RingEntry) => boolean, limit = this.size): RingEntry[] {
    const out: RingEntry[] = [];
    for (let i = 1; i <= this.size && out.length < limit; i++) {
      const entry = this.entries[(this.next - i + this.size) % this.size];
      if (entry && filter(entry)) out.push(entry);
    }
    return out;
  }

  /** the newest entry of a tenant with this request id */
  find(tenantId: string, requestId: string): RingEntry | undefined {
    return this.list((e) => e.row.tenant_id === tenantId && e.row.request_id === requestId, 1)[0];
  }
}
