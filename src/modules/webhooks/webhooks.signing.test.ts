import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deliveryBody, deliveryHeaders } from './webhooks.signing.js';

describe('delivery body and headers', () => {
  it('keeps the stored payload bytes as they are', () => {
    const payload = '{"wallet_id":1,"amount":"1.000000000000000000","note":"ü \\u2028"}';
    expect(deliveryBody('balance.updated', payload)).toBe(`{"event":"balance.updated","data":${payload}}`);
  });

  it('signs the exact body (hex) and id.timestamp.body (Standard Webhooks, base64)', () => {
    const body = deliveryBody('wallet.created', '{"wallet_id":3}');
    const h = deliveryHeaders({
      deliveryId: 'd-1',
      eventName: 'wallet.created',
      body,
      secret: 'key',
      extra: { 'X-A': 'b' },
      timestampS: 1700000000,
    });
    expect(h).toEqual({
      'X-A': 'b',
      'content-type': 'application/json',
      'user-agent': 'wallet-service-webhooks/0.1',
      'x-webhook-event': 'wallet.created',
      'x-webhook-delivery': 'd-1',
      'x-webhook-signature': `sha256=${createHmac('sha256', 'key').update(body).digest('hex')}`,
      'webhook-id': 'd-1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': `v1,${createHmac('sha256', 'key').update(`d-1.1700000000.${body}`).digest('base64')}`,
    });
    const unsigned = deliveryHeaders({ deliveryId: 'd-1', eventName: 'wallet.created', body, secret: null, extra: {}, timestampS: 1 });
    expect(unsigned['x-webhook-signature']).toBeUndefined();
    expect(unsigned['webhook-signature']).toBeUndefined();
  });
});
