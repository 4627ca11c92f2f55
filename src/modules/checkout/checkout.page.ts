/**
 * The checkout page, rendered on the server: complete without its script (the status as of the
 * request), then kept live by it (checkout.assets.ts). Every value from the charge is
 * HTML-escaped; `content.title` and `content.description` are the merchant's text shown as text.
 */
import { formatUnits18 } from '../../lib/money.js';
import { CHECKOUT_CSS, CHECKOUT_JS } from './checkout.assets.js';
import { DEVNET_CHAIN_ID } from '../networks/networks.service.js';
import type { CheckoutRow } from './checkout.repository.js';

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

const BADGES: Record<string, string> = {
  pending: 'Awaiting payment',
  partial: 'Partially paid',
  paid: 'Paid',
  expired: 'Expired',
  failed: 'Underpaid',
};

/** What the page says for a charge's state (the script says the same after each poll). */
export function stateTexts(c: CheckoutRow) {
  const amount = shortAmount(c.amount, c.decimals);
  const paid = shortAmount(c.paid_amount, c.decimals);
  const missing = shortAmount(c.amount > c.paid_amount ? c.amount - c.paid_amount : 0n, c.decimals);
  const over = c.paid_amount > c.amount ? ` (${shortAmount(c.paid_amount - c.amount, c.decimals)} ${c.symbol} more than asked).` : '.';
  const view = c.status === 'pending' && c.paid_amount > 0n ? 'partial' : c.status in BADGES ? c.status : 'pending';
  return {
    view,
    badge: BADGES[view]!,
    partial: `Received ${paid} ${c.symbol}. Send the remaining ${missing} ${c.symbol}.`,
    paid: `${paid} ${c.symbol} received${over}`,
    failed: `Received ${paid} of ${amount} ${c.symbol} before the request expired.`,
    missing: `${missing} ${c.symbol} missing`,
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

function summary(
  c: CheckoutRow,
  heading: string,
  description: string | null,
  amount: string,
  texts: ReturnType<typeof stateTexts>,
  nowMs: number,
): string {
  const mode = c.mode === 'test' ? '<span class="mode" title="Test network: no real money moves">Test mode</span>' : '';
  return `<section class="summary" aria-labelledby="heading">
<div class="merchant"><span class="mark">${ICONS.mark}</span><span>Payment request</span>${mode}</div>
<h1 id="heading">${escapeHtml(heading)}</h1>
${description === null ? '' : `<p class="description">${escapeHtml(description)}</p>`}
<div class="due"><span class="label" id="amount-label">${c.status === 'pending' ? 'Amount due' : 'Amount'}</span>
<p class="amount" id="amount"><span id="amount-value">${escapeHtml(amount)}</span><span class="token">${escapeHtml(c.symbol)}</span></p></div>
<dl class="facts">
<div><dt>Status</dt><dd><span class="badge badge-${texts.view}" id="status-badge" role="status">${texts.badge}</span></dd></div>
<div id="countdown-row"${c.status === 'pending' ? '' : ' hidden'}><dt>Expires in</dt><dd class="countdown" id="countdown">${c.expires_at > nowMs ? countdownText(c.expires_at - nowMs) : 'Confirming…'}</dd></div>
<div><dt>Network</dt><dd>${escapeHtml(c.network_name)}</dd></div>
</dl>
</section>`;
}

/** What is still to pay: the whole amount, or the rest of it after a partial payment (the QR code asks for this). */
export function amountDue(c: CheckoutRow): bigint {
  return c.paid_amount > 0n && c.paid_amount < c.amount ? c.amount - c.paid_amount : c.amount;
}

/** A pending native charge on the local devnet (chain id 31337) gets a payer button (README "Start"). */
export function devnetPayable(c: CheckoutRow): boolean {
  return c.chain_id === DEVNET_CHAIN_ID && c.is_native === 1 && c.status === 'pending' && amountDue(c) > 0n;
}

function devnetButton(c: CheckoutRow): string {
  if (!devnetPayable(c)) return '';
  return `<button type="button" class="btn btn-secondary" id="devnet-pay">Pay from the devnet</button>
<p class="footer">Local devnet only: anvil's dev account pays it, as a payer would.</p>`;
}

function payPanel(c: CheckoutRow, qrDataUrl: string, paymentUri: string, texts: ReturnType<typeof stateTexts>): string {
  const amount = shortAmount(amountDue(c), c.decimals);
  const token = escapeHtml(c.symbol);
  return `<div id="panel-pay"${c.status === 'pending' ? '' : ' hidden'}>
<h2>Scan to pay</h2>
<p class="hint">Send exactly <strong>${escapeHtml(amount)} ${token}</strong> on ${escapeHtml(c.network_name)} to this address.</p>
<p class="note note-warn" id="partial-note"${texts.view === 'partial' ? '' : ' hidden'}>${escapeHtml(texts.partial)}</p>
<div class="qr"><img id="qr" src="${qrDataUrl}" width="196" height="196" alt="QR code: pay ${escapeHtml(amount)} ${token} to ${escapeHtml(c.address)}"></div>
${copyField('Deposit address', 'address', c.address)}
${copyField('Amount', 'amount-copy', amount, c.symbol)}
<a class="btn btn-primary" id="open-wallet" href="${escapeHtml(paymentUri)}">${ICONS.wallet}Open in wallet app</a>
${devnetButton(c)}
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

function resultPanels(c: CheckoutRow, texts: ReturnType<typeof stateTexts>, txHashes: string[]): string {
  const link = explorerLinks(c, txHashes);
  return `<div id="panel-paid" class="result result-paid"${c.status === 'paid' ? '' : ' hidden'}>
<div class="result-icon">${ICONS.check}</div>
<h2>Payment received</h2>
<p id="paid-text">${escapeHtml(texts.paid)}</p>
<p>Thank you. You can close this page.</p>
<div class="links">${link}</div>
</div>
<div id="panel-expired" class="result result-expired"${c.status === 'expired' ? '' : ' hidden'}>
<div class="result-icon">${ICONS.clock}</div>
<h2>This payment request has expired</h2>
<p>No payment arrived in time. Please do not send funds to this address; ask the merchant for a new payment link.</p>
</div>
<div id="panel-failed" class="result result-failed"${c.status === 'failed' ? '' : ' hidden'}>
<div class="result-icon">${ICONS.alert}</div>
<h2>Payment incomplete</h2>
<p id="failed-text">${escapeHtml(texts.failed)}</p>
<strong class="missing" id="failed-missing">${escapeHtml(texts.missing)}</strong>
<p>Please contact the merchant to settle the difference.</p>
</div>`;
}

/** The whole page. `qrDataUrl` is the QR code of `paymentUri` as a data: image. */
export function checkoutPage(c: CheckoutRow, opts: { paymentUri: string; qrDataUrl: string; nowMs: number; txHashes: string[] }): string {
  const amount = shortAmount(c.amount, c.decimals);
  const title = contentText(c.content, 'title', TITLE_MAX_CHARS);
  const description = contentText(c.content, 'description', DESCRIPTION_MAX_CHARS);
  const heading = title ?? `Pay ${amount} ${c.symbol}`;
  const pageTitle = title === null ? `Pay ${amount} ${c.symbol}` : `${title} · ${amount} ${c.symbol}`;
  const texts = stateTexts(c);
  const data = {
    uuid: c.uuid,
    status: c.status,
    amount: formatUnits18(c.amount, c.decimals),
    paid: formatUnits18(c.paid_amount, c.decimals),
    token: c.symbol,
    'expires-ms': String(c.expires_at),
    'now-ms': String(opts.nowMs),
    'page-title': pageTitle,
  };
  const attrs = Object.entries(data)
    .map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`)
    .join('');
  const body = `<main class="checkout" id="checkout"${attrs}>
${summary(c, heading, description, amount, texts, opts.nowMs)}
<section class="card" aria-label="Payment">
${payPanel(c, opts.qrDataUrl, opts.paymentUri, texts)}
${resultPanels(c, texts, opts.txHashes)}
</section>
<p class="footer">Payment reference <code>${escapeHtml(c.uuid)}</code></p>
<p class="sr" id="announce" aria-live="polite"></p>
</main>
<script>${CHECKOUT_JS}</script>`;
  return document(`${texts.view === 'paid' ? 'Paid' : texts.badge} · ${pageTitle}`, body);
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
