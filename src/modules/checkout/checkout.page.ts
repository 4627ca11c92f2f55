/**
 * The checkout page, rendered on the server: complete without its script (the status as of the
 * request), then kept live by it (checkout.assets.ts). Every value from the charge is
 * HTML-escaped; `content.title` and `content.description` are the merchant's text shown as text.
 */
import { formatUnits18 } from '../../lib/money.js';
import { CHECKOUT_CSS, CHECKOUT_JS } from './checkout.assets.js';
import { DEVNET_CHAIN_ID } from '../networks/networks.service.js';
import type { CheckoutRow } from './checkout.repository.js';
import {
  amountDue,
  changeKey,
  checkoutState,
  confirmingPayments,
  latePayments,
  OPEN_STATES,
  seenAmount,
  type CheckoutState,
  type SeenPayment,
  type SentRefund,
} from './checkout.state.js';

/** Longest title and description shown (the rest is cut): `content` itself may hold 16 KiB. */
const TITLE_MAX_CHARS = 200;
const DESCRIPTION_MAX_CHARS = 1000;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** An 18-place amount without its trailing zeros: `0.250000000000000000` → `0.25`. */
export function shortAmount(units: bigint, decimals: number): string {
  return formatUnits18(units, decimals).replace(/\.?0+$/, '');
}

function contentText(content: string | null, key: 'title' | 'description', max: number): string | null {
  if (content === null) return null;
  const v = (JSON.parse(content) as Record<string, unknown>)[key];
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  const text = String(v).trim();
  return text === '' ? null : text.slice(0, max);
}

/** `mm:ss`, or `h:mm:ss` from an hour up (the script's `clock`). */
export function countdownText(leftMs: number): string {
  const s = Math.max(0, Math.ceil(leftMs / 1000));
  const pad = (n: number) => String(n).padStart(2, '0');
  const h = Math.floor(s / 3600);
  const ms = `${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
  return h > 0 ? `${h}:${ms}` : ms;
}

/** The status badge of each state: its text and its colour. */
const BADGES: Record<CheckoutState, [string, string]> = {
  awaiting: ['Awaiting payment', 'pending'],
  partial: ['Partially paid', 'partial'],
  confirming: ['Confirming', 'confirming'],
  closed: ['Expired', 'expired'],
  paid: ['Paid', 'paid'],
  expired: ['Expired', 'expired'],
  failed: ['Underpaid', 'failed'],
  late: ['Late payment', 'late'],
};

export function badgeOf(state: CheckoutState): { text: string; className: string } {
  const [text, colour] = BADGES[state];
  return { text, className: `badge badge-${colour}` };
}

/** What the page says about the amounts, in the charge's token. */
export function stateTexts(c: CheckoutRow, ps: SeenPayment[]) {
  const t = (units: bigint) => `${shortAmount(units, c.decimals)} ${c.symbol}`;
  const confirming = confirmingPayments(ps).reduce((a, p) => a + p.amount, 0n);
  const missing = c.amount > c.paid_amount ? c.amount - c.paid_amount : 0n;
  const over = c.paid_amount > c.amount ? ` (${t(c.paid_amount - c.amount)} more than asked).` : '.';
  return {
    partial: `Received ${t(seenAmount(c, ps))}${confirming > 0n ? ` (${t(confirming)} of it still confirming)` : ''}. Send the remaining ${t(amountDue(c, ps))}.`,
    confirming: `${t(confirming)} reached the address and is waiting for the network’s confirmations.`,
    paid: `${t(c.paid_amount)} received${over}`,
    failed: `Received ${shortAmount(c.paid_amount, c.decimals)} of ${t(c.amount)} before the request expired.`,
    missing: `${t(missing)} missing`,
    late: `${t(latePayments(ps).reduce((a, p) => a + p.amount, 0n))}`,
  };
}

export const ICONS = {
  mark: '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M12 2 4 12l8 10 8-10z"/><path d="M4 12h16"/></svg>',
  copy: '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><rect x="9" y="9" width="12" height="12" rx="2"/><path d="M5 15H4a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1h10a1 1 0 0 1 1 1v1"/></svg>',
  wallet:
    '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M20 7H5a2 2 0 0 1 0-4h13v4"/><path d="M3 5v14a2 2 0 0 0 2 2h15V7"/><circle cx="16" cy="14" r="1.5"/></svg>',
  check:
    '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.6" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="m5 12.5 4.5 4.5L19 7.5"/></svg>',
  clock:
    '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><circle cx="12" cy="12" r="9"/><path d="M12 7v5l3 2"/></svg>',
  alert:
    '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.4" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M12 8v5"/><path d="M12 16.5h.01"/><circle cx="12" cy="12" r="9"/></svg>',
  external:
    '<svg viewBox="0 0 24 24" width="16" height="16" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M14 4h6v6"/><path d="M20 4 10 14"/><path d="M19 14v5a1 1 0 0 1-1 1H5a1 1 0 0 1-1-1V6a1 1 0 0 1 1-1h5"/></svg>',
};

/** A page of the payer's side: the checkout stylesheet, and `extraStyle` after it (the refund page's). */
export function document(title: string, body: string, extraStyle?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<style>${CHECKOUT_CSS}</style>${extraStyle === undefined ? '' : `\n<style>${extraStyle}</style>`}
</head>
<body>
${body}
</body>
</html>
`;
}

function copyField(label: string, id: string, value: string, unit = ''): string {
  const v = escapeHtml(value);
  const suffix = unit === '' ? '' : `<span class="unit">${escapeHtml(unit)}</span>`;
  return `<span class="label" id="${id}-label">${label}</span>
<div class="copy-field"><code id="${id}" aria-labelledby="${id}-label">${v}</code>${suffix}<button class="copy" type="button" data-copy="${v}" aria-label="Copy ${label.toLowerCase()}">${ICONS.copy}<span class="copy-label">Copy</span></button></div>`;
}

function summary(c: CheckoutRow, heading: string, description: string | null, state: CheckoutState, nowMs: number): string {
  const amount = shortAmount(c.amount, c.decimals);
  const open = OPEN_STATES.includes(state);
  const badge = badgeOf(state);
  const mode = c.mode === 'test' ? '<span class="mode" title="Test network: no real money moves">Test mode</span>' : '';
  return `<section class="summary" aria-labelledby="heading">
<div class="merchant"><span class="mark">${ICONS.mark}</span><span>Payment request</span>${mode}</div>
<h1 id="heading">${escapeHtml(heading)}</h1>
${description === null ? '' : `<p class="description">${escapeHtml(description)}</p>`}
<div class="due"><span class="label" id="amount-label">${open ? 'Amount due' : 'Amount'}</span>
<p class="amount" id="amount"><span id="amount-value">${escapeHtml(amount)}</span><span class="token">${escapeHtml(c.symbol)}</span></p></div>
<dl class="facts">
<div><dt>Status</dt><dd><span class="${badge.className}" id="status-badge" role="status">${badge.text}</span></dd></div>
<div id="countdown-row"${open ? '' : ' hidden'}><dt>Expires in</dt><dd class="countdown" id="countdown">${countdownText(c.expires_at - nowMs)}</dd></div>
<div><dt>Network</dt><dd>${escapeHtml(c.network_name)}</dd></div>
</dl>
</section>`;
}

/** A native charge on the local devnet (chain id 31337) gets a payer button while it takes payment (README "Start"). */
export function devnetPayable(c: CheckoutRow, ps: SeenPayment[], nowMs: number): boolean {
  return c.chain_id === DEVNET_CHAIN_ID && c.is_native === 1 && OPEN_STATES.includes(checkoutState(c, ps, nowMs));
}

function devnetButton(c: CheckoutRow, ps: SeenPayment[], nowMs: number): string {
  if (!devnetPayable(c, ps, nowMs)) return '';
  return `<button type="button" class="btn btn-secondary" id="devnet-pay">Pay from the devnet</button>
<p class="footer">Local devnet only: anvil's dev account pays it, as a payer would.</p>`;
}

interface PageInput {
  c: CheckoutRow;
  ps: SeenPayment[];
  refunds: SentRefund[];
  state: CheckoutState;
  nowMs: number;
  texts: ReturnType<typeof stateTexts>;
  paymentUri: string;
  qrDataUrl: string;
}

function payPanel({ c, ps, state, nowMs, texts, paymentUri, qrDataUrl }: PageInput): string {
  const amount = shortAmount(amountDue(c, ps), c.decimals);
  const token = escapeHtml(c.symbol);
  return `<div id="panel-pay">
<h2>Scan to pay</h2>
<p class="hint">Send exactly <strong>${escapeHtml(amount)} ${token}</strong> on ${escapeHtml(c.network_name)} to this address.</p>
${state === 'partial' ? `<p class="note note-warn" id="partial-note">${escapeHtml(texts.partial)}</p>` : ''}
<div class="qr"><img id="qr" src="${qrDataUrl}" width="196" height="196" alt="QR code: pay ${escapeHtml(amount)} ${token} to ${escapeHtml(c.address)}"></div>
${copyField('Deposit address', 'address', c.address)}
${copyField('Amount', 'amount-copy', amount, c.symbol)}
<a class="btn btn-primary" id="open-wallet" href="${escapeHtml(paymentUri)}">${ICONS.wallet}Open in wallet app</a>
${devnetButton(c, ps, nowMs)}
</div>`;
}

/** Links to the block explorer (when the network has one): each paying transaction, else the deposit address. */
function explorerLinks(c: CheckoutRow, txHashes: string[]): string {
  if (c.block_explorer === '') return '';
  const base = c.block_explorer.replace(/\/+$/, '');
  const link = (href: string, text: string, hash = '') =>
    `<a class="link explorer-link" href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer">${escapeHtml(text)}${hash === '' ? '' : ` <span class="hash">${escapeHtml(hash)}</span>`}${ICONS.external}</a>`;
  if (txHashes.length === 0) return link(`${base}/address/${c.address}`, 'View on the block explorer');
  return txHashes.map((h) => link(`${base}/tx/${h}`, 'View transaction', `${h.slice(0, 8)}…${h.slice(-6)}`)).join('\n');
}

/**
 * Each payment's whole transaction hash, to copy and keep (the payer's proof), with its explorer
 * link where the network has one. A payment found on the address by its balance has no hash.
 */
function txList(c: CheckoutRow, ps: SeenPayment[], id: string): string {
  const items = ps.map((p, i) => {
    const amount = `${shortAmount(p.amount, c.decimals)} ${c.symbol}${p.confirmed ? '' : ', confirming'}`;
    if (p.tx_hash === null)
      return `<li><p class="tx-amount">${escapeHtml(amount)}: found on the address, no transaction hash known</p></li>`;
    return `<li><p class="tx-amount">${escapeHtml(amount)}</p>${copyField('Transaction hash', `${id}-${i}`, p.tx_hash)}${explorerLinks(c, [p.tx_hash])}</li>`;
  });
  return `<ul class="txs" id="${id}">${items.join('\n')}</ul>`;
}

function resultPanel(id: string, kind: string, icon: string, body: string): string {
  return `<div id="panel-${id}" class="result result-${kind}">
<div class="result-icon">${icon}</div>
${body}
</div>`;
}

/** A payment after the charge was settled (paid or underpaid): not counted, and what to do about it. */
function lateNote(c: CheckoutRow, ps: SeenPayment[], texts: ReturnType<typeof stateTexts>): string {
  const late = latePayments(ps);
  if (late.length === 0) return '';
  return `<div class="note note-warn late-note" id="late-note">
<p><strong>A further ${escapeHtml(texts.late)} arrived after this request was settled</strong>, and was not counted toward it. The merchant has it and will either refund it or honour it: please contact the merchant and keep the transaction hash.</p>
${txList(c, late, 'late-tx')}
</div>`;
}

/** What the merchant sent back: each refund, on its way or arrived, with its transaction. */
function refundNote(c: CheckoutRow, refunds: SentRefund[]): string {
  if (refunds.length === 0) return '';
  const items = refunds.map((r, i) => {
    const text = `${shortAmount(r.amount, c.decimals)} ${c.symbol} ${r.confirmed ? 'refunded to you' : 'being refunded to you'}`;
    if (r.tx_hash === null) return `<li><p class="tx-amount">${escapeHtml(text)}</p></li>`;
    return `<li><p class="tx-amount">${escapeHtml(text)}</p>${copyField('Transaction hash', `refund-tx-${i}`, r.tx_hash)}${explorerLinks(c, [r.tx_hash])}</li>`;
  });
  return `<div class="note note-info refund-note" id="refund-note">
<p><strong>The merchant has sent a refund.</strong></p>
<ul class="txs">${items.join('\n')}</ul>
</div>`;
}

function closedText(c: CheckoutRow, texts: ReturnType<typeof stateTexts>): string {
  if (c.paid_amount > 0n)
    return `<p id="closed-text">${escapeHtml(texts.failed)}</p>
<strong class="missing">${escapeHtml(texts.missing)}</strong>
<p>Please do not send more to this address; contact the merchant to settle the difference.</p>`;
  return `<p id="closed-text">Please do not send funds to this address; ask the merchant for a new payment link.</p>
<p>A payment sent before it expired shows here once the network has it.</p>`;
}

type Body = (input: PageInput) => string;

const confirmingBody: Body = ({ c, ps, texts }) => `<h2>Payment seen, confirming</h2>
<p id="confirming-text">${escapeHtml(texts.confirming)}</p>
<p>This page updates once it is confirmed. Please do not pay again.</p>
${amountDue(c, ps) > 0n ? '<p>The request has expired: please do not send more to this address.</p>' : ''}
${txList(c, confirmingPayments(ps), 'confirming-tx')}`;

const paidBody: Body = ({ c, ps, texts }) => {
  const counted = ps.flatMap((p) => (p.confirmed && !p.late && p.tx_hash !== null ? [p.tx_hash] : []));
  const thanks =
    c.paid_amount > c.amount ? 'Thank you. Contact the merchant about what you sent in excess.' : 'Thank you. You can close this page.';
  return `<h2>Payment received</h2>
<p id="paid-text">${escapeHtml(texts.paid)}</p>
<p>${thanks}</p>
<div class="links">${explorerLinks(c, counted)}</div>
${lateNote(c, ps, texts)}`;
};

const failedBody: Body = ({ c, ps, texts }) => `<h2>Payment incomplete</h2>
<p id="failed-text">${escapeHtml(texts.failed)}</p>
<strong class="missing" id="failed-missing">${escapeHtml(texts.missing)}</strong>
<p>Please contact the merchant to settle the difference.</p>
${lateNote(c, ps, texts)}`;

const LATE_NEXT =
  'The merchant has it and will either refund it or honour your order. Please contact the merchant and keep the transaction hash below.';
const LATE_REFUNDED = 'The merchant has sent a refund (below). Please keep the transaction hashes.';

const lateBody: Body = ({ c, ps, refunds, texts }) => `<h2>Your payment arrived late</h2>
<p id="late-text">${escapeHtml(texts.late)} reached the address after this payment request expired, so it did not pay it.</p>
${c.paid_amount > 0n ? `<p>${escapeHtml(texts.failed)}</p>` : ''}
<p id="late-next">${refunds.length === 0 ? LATE_NEXT : LATE_REFUNDED}</p>
${txList(c, latePayments(ps), 'late-tx')}`;

/** Each state that takes no payment: its panel's look, icon and text. */
const RESULTS: Record<Exclude<CheckoutState, 'awaiting' | 'partial'>, { kind: string; icon: string; body: Body }> = {
  confirming: { kind: 'confirming', icon: ICONS.clock, body: confirmingBody },
  closed: {
    kind: 'expired',
    icon: ICONS.clock,
    body: ({ c, texts }) => `<h2>This payment request has expired</h2>\n${closedText(c, texts)}`,
  },
  paid: { kind: 'paid', icon: ICONS.check, body: paidBody },
  expired: {
    kind: 'expired',
    icon: ICONS.clock,
    body: () => `<h2>This payment request has expired</h2>
<p>It expired before it was paid. Please do not send funds to this address; ask the merchant for a new payment link.</p>`,
  },
  failed: { kind: 'failed', icon: ICONS.alert, body: failedBody },
  late: { kind: 'late', icon: ICONS.alert, body: lateBody },
};

function panelFor(input: PageInput): string {
  if (input.state === 'awaiting' || input.state === 'partial') return payPanel(input);
  const r = RESULTS[input.state];
  return resultPanel(input.state, r.kind, r.icon, `${r.body(input)}\n${refundNote(input.c, input.refunds)}`);
}

/** The card: what the state shows; while payment is offered, the expired panel too, hidden, for the script to show when time is up. */
function card(input: PageInput): string {
  const open = OPEN_STATES.includes(input.state);
  const closed = open ? panelFor({ ...input, state: 'closed' }).replace('<div id="panel-closed"', '<div id="panel-closed" hidden') : '';
  return `<section class="card" id="card" aria-label="Payment">
${panelFor(input)}
${closed}
</section>`;
}

/**
 * The whole page for the charge in `state` (checkout.state.ts). `qrDataUrl` is the QR code of
 * `paymentUri` as a data: image (drawn only while the page takes payment).
 */
export function checkoutPage(
  c: CheckoutRow,
  opts: { paymentUri: string; qrDataUrl: string; nowMs: number; payments: SeenPayment[]; refunds: SentRefund[]; state: CheckoutState },
): string {
  const amount = shortAmount(c.amount, c.decimals);
  const title = contentText(c.content, 'title', TITLE_MAX_CHARS);
  const description = contentText(c.content, 'description', DESCRIPTION_MAX_CHARS);
  const heading = title ?? `Pay ${amount} ${c.symbol}`;
  const pageTitle = title === null ? `Pay ${amount} ${c.symbol}` : `${title} · ${amount} ${c.symbol}`;
  const { state, nowMs, payments: ps, refunds } = opts;
  const data = {
    uuid: c.uuid,
    state,
    key: changeKey(state, formatUnits18(c.paid_amount, c.decimals), ps, refunds),
    'expires-ms': String(c.expires_at),
    'now-ms': String(nowMs),
    'page-title': pageTitle,
  };
  const attrs = Object.entries(data)
    .map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`)
    .join('');
  const input: PageInput = {
    c,
    ps,
    refunds,
    state,
    nowMs,
    texts: stateTexts(c, ps),
    paymentUri: opts.paymentUri,
    qrDataUrl: opts.qrDataUrl,
  };
  const body = `<main class="checkout" id="checkout"${attrs}>
${summary(c, heading, description, state, nowMs)}
${card(input)}
<p class="footer">Payment reference <code>${escapeHtml(c.uuid)}</code></p>
<p class="sr" id="announce" aria-live="polite"></p>
</main>
<script>${CHECKOUT_JS}</script>`;
  return document(`${badgeOf(state).text} · ${pageTitle}`, body);
}

/** The page for an unknown or malformed uuid (served with 404). */
export function notFoundPage(): string {
  return document(
    'Payment not found',
    `<main class="lost"><div class="card" role="alert">
<div class="result result-expired"><div class="result-icon">${ICONS.alert}</div>
<h1>Payment not found</h1>
<p>This payment link is not valid. Check the link you were given, or ask the merchant for a new one.</p></div>
</div></main>`,
  );
}
