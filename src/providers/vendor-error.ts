/**
 * A vendor's error reply read as the vendor wrote it: its own type name and
 * message. Each format is recognised by its shape, not by the provider:
 * - Bedrock names the exception on `x-amzn-errortype` (`Name:namespace`), body `{message}`;
 * - Google's `{error:{code, message, status}}` (the google.rpc status name);
 * - OpenAI's `{error:{message, type, code}}` and Anthropic's `{type:"error", error:{type, message}}`.
 */
export interface VendorError {
  type: string;
  message: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function parsed(body: Buffer): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(body.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export function readVendorError(status: number, body: Buffer, headers: Readonly<Record<string, string | string[] | undefined>>): VendorError {
  const json = parsed(body);
  const inner = json && typeof json['error'] === 'object' && json['error'] !== null ? (json['error'] as Record<string, unknown>) : undefined;
  const aws = str(headers['x-amzn-errortype'])?.split(':')[0];
  const type = aws ?? str(inner?.['status']) ?? str(inner?.['type']) ?? str(json?.['__type'])?.split('#').pop() ?? `http_${status}`;
  const message = str(inner?.['message']) ?? str(json?.['message']) ?? str(json?.['Message']) ?? (body.length > 0 ? body.toString('utf8') : `the provider answered ${status}`);
  return { type, message };
}
