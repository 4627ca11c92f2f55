/** Shared set-up of the webhook tests: a user with a wallet, webhooks through the API, events in the outbox. */
import { expect } from 'vitest';
import type { TestApp, TestUser } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { recordEvent } from '../../src/modules/events/outbox.js';
import type { EventName } from '../../src/modules/events/events.catalogue.js';
import { eventInfo } from '../../src/modules/webhooks/webhooks.catalogue.js';
import { startDeliveryWorker, type DeliveryWorker } from '../../src/workers/deliveries.js';

export interface Owner {
  user: TestUser;
  walletId: number;
}

export async function owner(t: TestApp): Promise<Owner> {
  const user = await t.createUser();
  const wallet = await createWalletRow(t, user.id);
  return { user, walletId: wallet.id };
}

export async function createWebhook(t: TestApp, o: Owner, body: Record<string, unknown>) {
  const res = await t.request('POST', `/api/wallet/${o.walletId}/webhook/create`, { token: o.user.token, body });
  expect(res.status, res.text).toBe(200);
  return res.body.data as { id: number; url: string; type: string; events: string[]; status: string };
}

/** Records an event as a module would (sample payload of the catalogue, this wallet's id). */
export async function emit(t: TestApp, o: Owner, name: EventName, payload?: Record<string, unknown>): Promise<number> {
  return recordEvent(t.store.db, {
    userId: o.user.id,
    walletId: o.walletId,
    name,
    payload: payload ?? { ...eventInfo(name)!.payload, wallet_id: o.walletId },
    nowMs: Date.now(),
  });
}

export function deliveriesOf(t: TestApp, webhookId: number) {
  return t.store.db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId).orderBy('id', 'asc').execute();
}

export function attemptsOf(t: TestApp, deliveryId: number) {
  return t.store.db.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', deliveryId).orderBy('attempt', 'asc').execute();
}

export function startWorker(t: TestApp): DeliveryWorker {
  return startDeliveryWorker(t.ctx, { webhooks: t.services.webhooks });
}
