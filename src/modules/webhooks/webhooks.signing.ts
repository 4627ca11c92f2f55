/**
 * The body and headers of a delivery (docs/webhooks.md, "What a delivery looks like"). Pure
 * functions: the worker calls them on every attempt, the tests and the docs' receiver example
 * check them.
 *
 * - `X-Webhook-Signature: sha256=<lowercase hex HMAC-SHA256(secret, body)>` over the exact
 *   body bytes sent;
 * - Standard Webhooks: `webhook-id` (the delivery uuid, the same on every retry),
 *   `webhook-timestamp` (Unix seconds of this attempt) and
 *   `webhook-signature: v1,<base64 HMAC-SHA256(secret, "id.timestamp.body")>`, keyed with the
 *   secret's UTF-8 bytes (a Standard Webhooks library is given the secret base64-encoded).
 * - During a secret rotation's overlap, `webhook-signature` carries both signatures,
 *   space-separated, the new one first (`v1,<new> v1,<old>`), as Standard Webhooks allows: a
 *   receiver that knows either secret verifies. `X-Webhook-Signature` uses the new one only.
 */
import { hmacSha256Base64, hmacSha256Hex } from '../../lib/crypto.js';

export const USER_AGENT = 'wallet-service-webhooks/0.1';

/** `{"event":"<name>","data":<payload>}`: the payload's stored JSON text, byte for byte. */
export function deliveryBody(eventName: string, payloadJson: string): string {
  return `{"event":${JSON.stringify(eventName)},"data":${payloadJson}}`;
}

export interface DeliveryHeaderInput {
  deliveryId: string;
  eventName: string;
  body: string;
  secret: string | null;
  /** The secret a rotation replaced, while its overlap lasts; null otherwise. */
  previousSecret?: string | null;
  /** The webhook's `with_headers` (reserved names were refused when they were set). */
  extra: Readonly<Record<string, string>>;
  timestampS: number;
}

export function signatureHeader(secret: string, body: string): string {
  return `sha256=${hmacSha256Hex(secret, body)}`;
}

export function standardSignature(secret: string, deliveryId: string, timestampS: number, body: string): string {
  return `v1,${hmacSha256Base64(Buffer.from(secret, 'utf8'), `${deliveryId}.${timestampS}.${body}`)}`;
}

export function deliveryHeaders(d: DeliveryHeaderInput): Record<string, string> {
  const headers: Record<string, string> = {
    ...d.extra,
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-webhook-event': d.eventName,
    'x-webhook-delivery': d.deliveryId,
    'webhook-id': d.deliveryId,
    'webhook-timestamp': String(d.timestampS),
  };
  if (d.secret !== null) {
    headers['x-webhook-signature'] = signatureHeader(d.secret, d.body);
    const signatures = [standardSignature(d.secret, d.deliveryId, d.timestampS, d.body)];
    if (d.previousSecret) signatures.push(standardSignature(d.previousSecret, d.deliveryId, d.timestampS, d.body));
    headers['webhook-signature'] = signatures.join(' ');
  }
  return headers;
}
