/**
 * The event catalogue shown by `GET /wallet/{wallet}/webhook/event/{event}`: for every event of
 * every webhook type, a description and a realistic sample of the `data` object a receiver
 * gets. The samples have every field of the event's `data`, as the service sends it
 * (amounts as 18-place strings, datetimes `YYYY-MM-DD HH:MM:SS` UTC, `token` the symbol).
 *
 * Also here: turning the event names a caller writes on create/update (`created`,
 * `charge.created`, `*`, and `confirmed` as an alias of `paid` for charges) into the stored
 * dotted names.
 */
import { EVENTS_BY_TYPE, type EventName, type WebhookType } from '../events/events.catalogue.js';

export interface EventInfo {
  event_name: EventName;
  description: string;
  payload: Record<string, unknown>;
}

const WALLET_ID = 12;
const CHARGE = {
  charge_id: 381,
  wallet_id: WALLET_ID,
  amount: '25.000000000000000000',
  token: 'USDC',
  uuid: '9b2f4c1e-7d3a-4e8b-a5c6-1f0e2d3c4b5a',
  expires: 300,
  created_at: '2025-03-14 09:26:53',
};
const DEPOSIT_ADDRESS = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const TX = {
  transaction_id: 5412,
  wallet_id: WALLET_ID,
  amount: '0.150000000000000000',
  token: 'ETH',
  tx_hash: '0x8d3f0b6a4e2c1d9f7b5a3c8e6d4f2a0b9c7e5d3f1a8b6c4e2d0f9a7b5c3e1d2f',
};
const TOKEN = {
  wallet_id: WALLET_ID,
  token_id: 47,
  name: 'USD Coin',
  symbol: 'USDC',
  contract: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
  decimals: 6,
  is_native: false,
};
const WALLET = {
  wallet_id: WALLET_ID,
  name: 'Shop checkout',
  address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  description: 'Receives payments for the online shop',
  is_mainnet: false,
  network: 31337,
};

const CATALOGUE: Record<EventName, Omit<EventInfo, 'event_name'>> = {
  'charge.created': {
    description: 'A payment charge was created and is waiting for payment to its deposit address.',
    payload: { ...CHARGE, status: 'pending' },
  },
  'charge.paid': {
    description:
      'Confirmed payments to the charge’s deposit address reached the charge amount before it expired. Sent once per charge. Subscribing to `confirmed` is the same as `paid`.',
    payload: {
      ...CHARGE,
      status: 'paid',
      address: DEPOSIT_ADDRESS,
      paid_amount: '25.000000000000000000',
      paid_at: '2025-03-14 09:28:11',
    },
  },
  'charge.expired': {
    description: 'The charge reached its expiry time with nothing received. Sent once per charge.',
    payload: {
      ...CHARGE,
      status: 'expired',
      address: DEPOSIT_ADDRESS,
      paid_amount: '0.000000000000000000',
      expired_at: '2025-03-14 09:31:53',
    },
  },
  'charge.failed': {
    description: 'The charge reached its expiry time partly paid (less than the amount was received). Sent once per charge.',
    payload: {
      ...CHARGE,
      status: 'failed',
      address: DEPOSIT_ADDRESS,
      paid_amount: '10.000000000000000000',
      failed_at: '2025-03-14 09:31:53',
    },
  },
  'charge.delayed': {
    description:
      'A payment reached the charge’s deposit address after the charge was settled (paid, expired or failed): it is late, does not change the charge, and is swept to the main address like the rest. Sent once per late payment.',
    payload: {
      ...CHARGE,
      status: 'expired',
      address: DEPOSIT_ADDRESS,
      paid_amount: '0.000000000000000000',
      payment: {
        tx_hash: '0x3c1e5a7b9d2f4e6a8c0b1d3f5e7a9c2b4d6f8e0a1c3b5d7f9e2a4c6b8d0f1e3a',
        from: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
        amount: '25.000000000000000000',
        block_number: 19436655,
        block_timestamp: '2025-03-14 09:33:02',
        late: true,
        internal: false,
        screened: false,
      },
    },
  },
  'charge.screened': {
    description:
      'A payment reached the charge’s deposit address from a sender on the service’s screening list (SCREENING_FILE). It is kept and listed on the charge with `screened: true`, never counted toward `paid_amount` (it does not pay the charge), and swept to the main address with the rest of the address’s money for the operator to handle. Sent once per screened payment, when it is confirmed.',
    payload: {
      ...CHARGE,
      status: 'pending',
      address: DEPOSIT_ADDRESS,
      paid_amount: '0.000000000000000000',
      payment: {
        tx_hash: '0x7a9c2b4d6f8e0a1c3b5d7f9e2a4c6b8d0f1e3a3c1e5a7b9d2f4e6a8c0b1d3f5e',
        from: '0x8589427373D6D84E98730D7795D8f6f8731FDA16',
        amount: '25.000000000000000000',
        block_number: 19436621,
        block_timestamp: '2025-03-14 09:27:40',
        late: false,
        internal: false,
        screened: true,
      },
    },
  },
  'charge.reopened': {
    description:
      'A chain reorganisation removed the block a settled charge (paid, expired or failed) was decided on: the charge is pending again, with the payments the new chain has. Its next settlement sends its outcome’s event (charge.paid, charge.expired or charge.failed) again.',
    payload: {
      ...CHARGE,
      status: 'pending',
      address: DEPOSIT_ADDRESS,
      paid_amount: '0.000000000000000000',
      reopened_at: '2025-03-14 09:28:40',
    },
  },
  'charge.refunded': {
    description:
      'A refund of the charge was confirmed on chain (its transfer reached the network’s confirmations): the charge’s fields and the `refund` (as in the charge’s `refunds`). Sent when the refund’s transfer confirms; again if a reorg removed that block and it confirms again.',
    payload: {
      ...CHARGE,
      status: 'paid',
      address: DEPOSIT_ADDRESS,
      paid_amount: '25.000000000000000000',
      refund: {
        id: 3,
        uuid: '5b0d7f3e-2c41-4d8a-9f6e-1a2b3c4d5e6f',
        amount: '5.000000000000000000',
        address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
        status: 'confirmed',
        transaction_id: 57,
        tx_hash: '0x8f2d4b6a1c3e5f7a9b0d2c4e6f8a1b3d5c7e9f0a2b4d6c8e1f3a5b7d9c0e2f4a',
        reason: 'Order cancelled',
        claim_url: null,
        expires_at: null,
        created_at: '2025-03-14 11:20:05',
      },
      refunded_at: '2025-03-14 11:20:31',
    },
  },
  'transaction.created': {
    description: 'An outgoing transaction was signed, recorded and broadcast; it is pending until confirmed on chain.',
    payload: { ...TX, block_number: null, status: 'pending', type: 'transfer', created_at: '2025-03-14 10:02:45' },
  },
  'transaction.confirmed': {
    description: 'A transaction reached the network’s number of confirmations.',
    payload: { ...TX, block_number: 19436602, status: 'confirmed', type: 'transfer', confirmed_at: '2025-03-14 10:03:09' },
  },
  'transaction.failed': {
    description: 'A transaction reverted on chain or was dropped by the network.',
    payload: { ...TX, block_number: 19436602, status: 'failed', type: 'transfer', failed_at: '2025-03-14 10:03:09' },
  },
  'transaction.reorged': {
    description:
      'A reorg removed the block of a confirmed transaction (outgoing or received): it is pending again, `block_number` the removed block. Mined again, it is confirmed again (transaction.confirmed); a received one whose sender’s nonce another transaction took is failed (dropped).',
    payload: { ...TX, block_number: 19436602, status: 'pending', type: 'transfer', reorged_at: '2025-03-14 10:03:33' },
  },
  'transaction.approval_required': {
    description:
      'An outgoing transaction is over the wallet policy’s `approval_above`: recorded `awaiting_approval`, nothing signed or sent (`tx_hash` and `nonce` null), its amount and maximum fee reserved. A person approves it (then `transaction.created` when it is signed and sent) or rejects it; undecided within APPROVAL_TTL_S it fails (`approval_expired`, transaction.failed).',
    payload: { ...TX, tx_hash: null, block_number: null, status: 'awaiting_approval', type: 'transfer', created_at: '2025-03-14 10:02:45' },
  },
  'transaction.stuck': {
    description:
      'Every RPC endpoint refused a pending transaction’s re-send for a reason other than its fee (e.g. on an OP chain the L1 data fee rose past its reserve): it is `stuck` with `stuck_reason` (the node’s words), emitted once. It keeps its nonce until a speed-up, a cancel or the chain settles it.',
    payload: {
      ...TX,
      block_number: null,
      status: 'pending',
      type: 'transfer',
      stuck_reason: 'insufficient funds for gas * price + value',
      created_at: '2025-03-14 10:32:45',
    },
  },
  'balance.updated': {
    description:
      'The wallet’s balance of a token changed (after a confirmed transaction or a detected transfer). `block_number` is the block `new_balance` was read at; for one wallet and token it never goes down from one event to the next.',
    payload: {
      wallet_id: WALLET_ID,
      token: 'ETH',
      old_balance: '1.250000000000000000',
      new_balance: '1.099979000000000000',
      change: '-0.150021000000000000',
      block_number: 19436602,
      updated_at: '2025-03-14 10:03:09',
    },
  },
  'token.added': {
    description: 'An ERC-20 token was added to the wallet.',
    payload: { ...TOKEN, added_at: '2025-03-13 16:40:02' },
  },
  'token.removed': {
    description: 'A token was removed from the wallet (marked inactive).',
    payload: { ...TOKEN, removed_at: '2025-03-20 08:15:37' },
  },
  'wallet.created': {
    description: 'A wallet was created.',
    payload: { ...WALLET, created_at: '2025-03-13 16:38:20' },
  },
  'wallet.updated': {
    description: 'A wallet’s name or description changed.',
    payload: { ...WALLET, updated_at: '2025-03-15 11:04:58' },
  },
};

export function eventInfo(name: string): EventInfo | null {
  if (!Object.hasOwn(CATALOGUE, name)) return null;
  const entry = CATALOGUE[name as EventName];
  return { event_name: name as EventName, description: entry.description, payload: structuredClone(entry.payload) };
}

/** The wildcard: every event of the webhook's type. */
export const ALL_EVENTS = '*';

/** Short names accepted as aliases, per type (`confirmed` means `paid` for charges). */
const ALIASES: Partial<Record<WebhookType, Record<string, string>>> = {
  charge: { confirmed: 'paid' },
};

/**
 * The stored (dotted) name of an event as a caller wrote it for a webhook of `type`, `*` for
 * all, or null when it is not an event of that type.
 */
export function normaliseEventName(type: WebhookType, raw: string): string | null {
  if (raw === ALL_EVENTS) return ALL_EVENTS;
  let short = raw;
  const dot = raw.indexOf('.');
  if (dot !== -1) {
    if (raw.slice(0, dot) !== type) return null;
    short = raw.slice(dot + 1);
  }
  short = ALIASES[type]?.[short] ?? short;
  const full = `${type}.${short}`;
  return (EVENTS_BY_TYPE[type] as readonly string[]).includes(full) ? full : null;
}

/** Whether a webhook subscribed to `events` (stored names) wants `eventName`. */
export function subscribes(events: readonly string[], eventName: string): boolean {
  return events.includes(ALL_EVENTS) || events.includes(eventName);
}
