/**
 * The checkout page, rendered on the server: complete without its script (the status as of the
 * request), then kept live by it (checkout.assets.ts). Every value from the charge is
 * HTML-escaped; `content.title` and `content.description` are the merchant's text shown as text.
 */
import { formatUnits18 } from '../../lib/money.js';
import { CHECKOUT_CSS, CHECKOUT_JS } from './checkout.assets.js';
import { DEVNET_CHAIN_ID } from '../networks/networks.service.js';
import type { CheckoutQuote, CheckoutRow } from './checkout.repository.js';
import {
  changeKey,
  checkoutState,
  confirmingPayments,
  isPriceCharge,
  isWhole,
  latePayments,
  nativeQuote,
  OPEN_STATES,
  seenShare,
  countedShare,
  type CheckoutState,
  type SeenPayment,
  type SentRefund,
} from './checkout.state.js';
import { shortAmount, stateTexts, type StateTexts } from './checkout.texts.js';

/** Longest title and description shown (the rest is cut): `content` itself may hold 16 KiB. */
const TITLE_MAX_CHARS = 200;
const DESCRIPTION_MAX_CHARS = 1000;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
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

/** What the summary shows as the amount: a price charge's price, else the amount of its token. */
function headline(c: CheckoutRow): { value: string; unit: string } {
  if (isPriceCharge(c)) return { value: c.price_amount!, unit: c.price_currency! };
  return { value: shortAmount(c.amount, c.decimals), unit: c.symbol };
}

function summary(c: CheckoutRow, heading: string, description: string | null, state: CheckoutState, nowMs: number): string {
  const { value, unit } = headline(c);
  const open = OPEN_STATES.includes(state);
  // A price stays the price; an amount of one token is "due" only while the page takes payment.
  const [label, closedLabel] = isPriceCharge(c) ? ['Price', 'Price'] : [open ? 'Amount due' : 'Amount', 'Amount'];
  const badge = badgeOf(state);
  const mode = c.mode === 'test' ? '<span class="mode" title="Test network: no real money moves">Test mode</span>' : '';
  return `<section class="summary" aria-labelledby="heading">
<div class="merchant"><span class="mark">${ICONS.mark}</span><span>Payment request</span>${mode}</div>
<h1 id="heading">${escapeHtml(heading)}</h1>
${description === null ? '' : `<p class="description">${escapeHtml(description)}</p>`}
<div class="due"><span class="label" id="amount-label" data-closed="${closedLabel}">${label}</span>
<p class="amount" id="amount"><span id="amount-value">${escapeHtml(value)}</span><span class="token">${escapeHtml(unit)}</span></p></div>
<dl class="facts">
<div><dt>Status</dt><dd><span class="${badge.className}" id="status-badge" role="status">${badge.text}</span></dd></div>
<div id="countdown-row"${open ? '' : ' hidden'}><dt>Expires in</dt><dd class="countdown" id="countdown">${countdownText(c.expires_at - nowMs)}</dd></div>
<div><dt>Network</dt><dd>${escapeHtml(c.network_name)}</dd></div>
</dl>
</section>`;
}

/**
 * A charge payable in the network's own coin on the local devnet (chain id 31337) gets a payer
 * button while it takes payment (README "Start"); for a price charge, that is its native quote.
 */
export function devnetPayable(c: CheckoutRow, ps: SeenPayment[], nowMs: number): boolean {
  return c.chain_id === DEVNET_CHAIN_ID && nativeQuote(c) !== undefined && OPEN_STATES.includes(checkoutState(c, ps, nowMs));
}

function devnetButton(c: CheckoutRow, ps: SeenPayment[], nowMs: number): string {
  if (!devnetPayable(c, ps, nowMs)) return '';
  const coin = isPriceCharge(c) ? ` in ${escapeHtml(nativeQuote(c)!.symbol)}` : '';
  return `<button type="button" class="btn btn-secondary" id="devnet-pay">Pay from the devnet</button>
<p class="footer">Local devnet only: anvil's dev account pays it${coin}, as a payer would.</p>`;
}

/** A way to pay what is due: one of the charge's tokens, the amount of it still due, its payment URI and that URI's QR code. */
export interface Offer {
  quote: CheckoutQuote;
  due: bigint;
  uri: string;
  /** A data: image; empty while the page takes no payment. */
  qr: string;
}

interface PageInput {
  c: CheckoutRow;
  ps: SeenPayment[];
  refunds: SentRefund[];
  state: CheckoutState;
  nowMs: number;
  texts: StateTexts;
  /** The charge's token, or each of a price charge's quotes, in order. */
  offers: Offer[];
}

/** What to send of one offer: the amount, the QR code, the amount to copy and the wallet link (`n` tells a price charge's offers apart). */
function offerParts(c: CheckoutRow, o: Offer, n: number | null) {
  const amount = shortAmount(o.due, o.quote.decimals);
  const token = escapeHtml(o.quote.symbol);
  const id = (name: string) => (n === null ? name : `${name}-${n}`);
  const attrs = n === null ? '' : ` data-quote="${n}"${n === 0 ? '' : ' hidden'}`;
  return {
    hint: `<p class="hint"${attrs}>Send exactly <strong>${escapeHtml(amount)} ${token}</strong> on ${escapeHtml(c.network_name)} to this address.</p>`,
    qr: `<div class="qr"${attrs}><img id="${id('qr')}" src="${o.qr}" width="196" height="196" alt="QR code: pay ${escapeHtml(amount)} ${token} to ${escapeHtml(c.address)}"></div>`,
    copy: copyField('Amount', id('amount-copy'), amount, o.quote.symbol),
    link: `<a class="btn btn-primary" id="${id('open-wallet')}" href="${escapeHtml(o.uri)}">${ICONS.wallet}Open in wallet app</a>`,
    attrs,
  };
}

function payPanel(input: PageInput): string {
  if (isPriceCharge(input.c)) return pricePayPanel(input);
  const { c, ps, state, nowMs, texts } = input;
  const o = offerParts(c, input.offers[0]!, null);
  return `<div id="panel-pay">
<h2>Scan to pay</h2>
${o.hint}
${state === 'partial' ? `<p class="note note-warn" id="partial-note">${escapeHtml(texts.partial)}</p>` : ''}
${o.qr}
${copyField('Deposit address', 'address', c.address)}
${o.copy}
${o.link}
${devnetButton(c, ps, nowMs)}
</div>`;
}

/**
 * A price charge's payment panel: a radio button per quoted token (its amount still due beside
 * it), then the chosen token's amount, QR code and wallet link. Every token's parts are rendered;
 * the page's script shows the chosen one's (`data-quote`), the first until the payer picks.
 */
function pricePayPanel({ c, ps, state, nowMs, texts, offers }: PageInput): string {
  const parts = offers.map((o, n) => offerParts(c, o, n));
  const choices = offers.map(
    (o, n) =>
      `<label class="choice"><input type="radio" name="quote" value="${n}"${n === 0 ? ' checked' : ''}><span class="choice-token">${escapeHtml(o.quote.symbol)}</span> <span class="choice-amount">${escapeHtml(shortAmount(o.due, o.quote.decimals))}</span></label>`,
  );
  return `<div id="panel-pay">
<h2>Scan to pay</h2>
${state === 'partial' ? `<p class="note note-warn" id="partial-note">${escapeHtml(texts.partial)}</p>` : ''}
<fieldset class="picker" id="picker"><legend class="label">Pay with</legend>
<div class="choices">
${choices.join('\n')}
</div></fieldset>
${parts.map((p) => `${p.hint}\n${p.qr}`).join('\n')}
${copyField('Deposit address', 'address', c.address)}
${parts.map((p) => `<div class="offer"${p.attrs}>\n${p.copy}\n${p.link}\n</div>`).join('\n')}
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
    const amount = `${shortAmount(p.amount, p.decimals)} ${p.symbol}${p.confirmed ? '' : ', confirming'}`;
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
function lateNote(c: CheckoutRow, ps: SeenPayment[], texts: StateTexts): string {
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

function closedText(c: CheckoutRow, texts: StateTexts): string {
  if (countedShare(c).num > 0n)
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
${isWhole(seenShare(c, ps)) ? '' : '<p>The request has expired: please do not send more to this address.</p>'}
${txList(c, confirmingPayments(ps), 'confirming-tx')}`;

const paidBody: Body = ({ c, ps, texts }) => {
  const hashes = ps.flatMap((p) => (p.confirmed && !p.late && p.tx_hash !== null ? [p.tx_hash] : []));
  const counted = countedShare(c);
  const thanks =
    counted.num > counted.den ? 'Thank you. Contact the merchant about what you sent in excess.' : 'Thank you. You can close this page.';
  return `<h2>Payment received</h2>
<p id="paid-text">${escapeHtml(texts.paid)}</p>
<p>${thanks}</p>
<div class="links">${explorerLinks(c, hashes)}</div>
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
${countedShare(c).num > 0n ? `<p>${escapeHtml(texts.failed)}</p>` : ''}
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
 * The whole page for the charge in `state` (checkout.state.ts). Each offer's `qr` is the QR code
 * of its `uri` as a data: image (drawn only while the page takes payment).
 */
export function checkoutPage(
  c: CheckoutRow,
  opts: { offers: Offer[]; nowMs: number; payments: SeenPayment[]; refunds: SentRefund[]; state: CheckoutState },
): string {
  const { value, unit } = headline(c);
  const amount = `${value} ${unit}`;
  const title = contentText(c.content, 'title', TITLE_MAX_CHARS);
  const description = contentText(c.content, 'description', DESCRIPTION_MAX_CHARS);
  const heading = title ?? `Pay ${amount}`;
  const pageTitle = title === null ? `Pay ${amount}` : `${title} · ${amount}`;
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
  const input: PageInput = { c, ps, refunds, state, nowMs, texts: stateTexts(c, ps), offers: opts.offers };
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
