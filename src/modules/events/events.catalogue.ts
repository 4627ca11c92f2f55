/** The event names, grouped by webhook type (docs/webhooks.md, "Create and update"). */
export const WEBHOOK_TYPES = ['charge', 'transaction', 'balance', 'token', 'wallet'] as const;
export type WebhookType = (typeof WEBHOOK_TYPES)[number];

export const EVENTS_BY_TYPE = {
  charge: [
    'charge.created',
    'charge.paid',
    'charge.expired',
    'charge.failed',
    'charge.delayed',
    'charge.reopened',
    'charge.refunded',
    'charge.screened',
  ],
  transaction: [
    'transaction.created',
    'transaction.confirmed',
    'transaction.failed',
    'transaction.reorged',
    'transaction.approval_required',
    'transaction.stuck',
  ],
  balance: ['balance.updated'],
  token: ['token.added', 'token.removed'],
  wallet: ['wallet.created', 'wallet.updated'],
} as const satisfies Record<WebhookType, readonly string[]>;

export type EventName = (typeof EVENTS_BY_TYPE)[WebhookType][number];

export const EVENT_NAMES: readonly EventName[] = Object.values(EVENTS_BY_TYPE).flat();

export function typeOfEvent(name: EventName): WebhookType {
  return name.split('.')[0] as WebhookType;
}
