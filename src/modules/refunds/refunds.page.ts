/**
 * The refund claim page (`GET /refund/{uuid}`), built like the checkout page: rendered on the
 * server with the refund's state, the checkout stylesheet plus a few rules of its own, one
 * inline script; everything allowed by hash in its Content-Security-Policy, nothing from
 * another host. It names the network and the merchant's reason. The payer types an address and
 * sends it (`POST /api/refund/{uuid}`, no HTML form: the policy has `form-action 'none'`); the
 * page then polls `GET /api/refund/{uuid}` and shows the refund sent, then confirmed, with the
 * address it went to and its transaction, without a reload.
 */
import { CHECKOUT_CSS, inlineHash, pagePolicy } from '../checkout/checkout.assets.js';
import { document, escapeHtml, ICONS } from '../checkout/checkout.page.js';
import type { publicRefundView } from './refunds.views.js';

type PublicRefund = ReturnType<typeof publicRefundView>;

/** The status badge as the server renders it (the script's BADGES and CLASSES say the same). */
const BADGES: Record<string, [string, string]> = {
  claimable: ['Ready to claim', 'badge-pending'],
  pending: ['Sent', 'badge-partial'],
  confirmed: ['Confirmed', 'badge-paid'],
  failed: ['Failed', 'badge-failed'],
  expired: ['Expired', 'badge-expired'],
};

export const REFUND_CSS = `
.summary .facts{margin-top:14px}
.claim{display:grid;gap:10px;margin:6px 0 4px}
.claim label{font-weight:650;font-size:.95rem}
.claim input{width:100%;font:inherit;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9rem;padding:12px;border:1px solid #cbd5e1;border-radius:11px;background:#fff;color:var(--text)}
.claim input:focus-visible{outline:3px solid #a5b4fc;outline-offset:1px}
.claim input[aria-invalid=true]{border-color:#dc2626}
.claim button{border:0;cursor:pointer;font:inherit}
.claim button:disabled{opacity:.6;cursor:progress}
.error{color:#b91c1c;font-size:.9rem;margin:0;min-height:1.35em}
.result-pending .result-icon{background:#fef3c7;color:#854d0e}
.result-confirmed .result-icon{background:#dcfce7;color:#15803d}
.reason{margin:14px 0 0}
.reason p{margin:0;white-space:pre-line;overflow-wrap:anywhere}
.sent{text-align:left;margin:18px 0 0}
.sent .label{margin-top:10px}
.sent-address{display:block;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88rem;word-break:break-all;margin:0 0 6px}
.sent .explorer-link{justify-content:flex-start}
`;

export const REFUND_JS = `
(function () {
  'use strict';
  var root = document.getElementById('refund');
  var uuid = root.getAttribute('data-uuid');
  var status = root.getAttribute('data-status');
  var key = root.getAttribute('data-key');
  var POLL_MS = 3000;
  var BADGES = { claimable: 'Ready to claim', pending: 'Sent', confirmed: 'Confirmed', failed: 'Failed', expired: 'Expired' };
  var CLASSES = { claimable: 'badge-pending', pending: 'badge-partial', confirmed: 'badge-paid', failed: 'badge-failed', expired: 'badge-expired' };
  function $(id) { return document.getElementById(id); }
  function render() {
    ['claimable', 'pending', 'confirmed', 'failed', 'expired'].forEach(function (s) { $('panel-' + s).hidden = s !== status; });
    var badge = $('badge');
    badge.textContent = BADGES[status] || status;
    badge.className = 'badge ' + (CLASSES[status] || 'badge-pending');
    var by = $('claim-by-row');
    if (by) by.hidden = status !== 'claimable';
  }
  function final() { return status === 'confirmed' || status === 'failed' || status === 'expired'; }
  // Where the refund went and its transaction, as the server renders them, once they are known.
  function refresh(data) {
    var next = data.status + '|' + (data.address || '') + '|' + (data.tx_hash || '');
    status = data.status;
    render();
    if (next === key) return;
    key = next;
    fetch(location.pathname, { cache: 'no-store' })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, 'text/html');
        ['panel-pending', 'panel-confirmed', 'panel-failed'].forEach(function (id) {
          var part = fresh.getElementById(id);
          if (part) $(id).innerHTML = part.innerHTML;
        });
      })
      .catch(function () { /* the panel shown stays until the next change */ });
  }
  function poll() {
    fetch('/api/refund/' + encodeURIComponent(uuid), { headers: { accept: 'application/json' }, cache: 'no-store' })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (body) { if (body && body.data) refresh(body.data); })
      .catch(function () { /* offline for a moment: the next poll tries again */ })
      .then(function () { if (!final() && status !== 'claimable') setTimeout(poll, POLL_MS); });
  }
  function fail(text) {
    $('error').textContent = text;
    $('address').setAttribute('aria-invalid', 'true');
  }
  $('address').addEventListener('input', function () {
    $('error').textContent = '';
    $('address').removeAttribute('aria-invalid');
  });
  $('send').addEventListener('click', function () {
    var address = $('address').value.trim();
    if (!/^0x[0-9a-fA-F]{40}$/.test(address)) { fail('Enter an address: 0x followed by 40 hexadecimal characters.'); return; }
    $('send').disabled = true;
    $('error').textContent = '';
    $('address').removeAttribute('aria-invalid');
    fetch('/api/refund/' + encodeURIComponent(uuid), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ address: address }) })
      .then(function (res) { return res.json().then(function (body) { return { ok: res.ok, status: res.status, body: body }; }); })
      .then(function (r) {
        if (r.ok && r.body.data) { refresh(r.body.data); setTimeout(poll, POLL_MS); return; }
        var errors = r.body && r.status === 422 && r.body.data;
        fail(errors && errors.address ? errors.address[0] : (r.body && r.body.message) || 'The refund could not be sent.');
        if (r.body && /claimed|expired/i.test(r.body.message || '')) poll();
      })
      .catch(function () { fail('The service could not be reached. Try again.'); })
      .then(function () { $('send').disabled = false; });
  });
  root.addEventListener('click', function (e) {
    var btn = e.target instanceof Element ? e.target.closest('[data-copy]') : null;
    if (!btn || !navigator.clipboard) return;
    navigator.clipboard.writeText(btn.getAttribute('data-copy')).then(function () {
      btn.querySelector('.copy-label').textContent = 'Copied';
      setTimeout(function () { btn.querySelector('.copy-label').textContent = 'Copy'; }, 1800);
    }, function () { /* nothing copied: the hash stays on the page to select */ });
  });
  render();
  if (!final() && status !== 'claimable') setTimeout(poll, POLL_MS);
})();
`;

/** The checkout page's policy with this page's script, and its stylesheet after the checkout one. */
export const REFUND_CSP = pagePolicy({ scripts: [inlineHash(REFUND_JS)], styles: [inlineHash(CHECKOUT_CSS), inlineHash(REFUND_CSS)] });

const hidden = (r: PublicRefund, s: string) => (r.status === s ? '' : ' hidden');

/** Where the refund was sent, and its transaction (to copy, and on the explorer when the network has one). */
function sentTo(r: PublicRefund): string {
  if (r.address === null) return '';
  const address = `<span class="label">Sent to</span><code class="sent-address" id="sent-address">${escapeHtml(r.address)}</code>`;
  if (r.tx_hash === null) return `<div class="sent">${address}<p id="sent-tx">The transaction is being prepared.</p></div>`;
  const hash = escapeHtml(r.tx_hash);
  const link =
    r.tx_url === null
      ? ''
      : `<a class="link explorer-link" id="tx-link" href="${escapeHtml(r.tx_url)}" target="_blank" rel="noopener noreferrer">View on the block explorer${ICONS.external}</a>`;
  return `<div class="sent">${address}
<span class="label" id="tx-label">Transaction</span>
<div class="copy-field"><code id="tx-hash" aria-labelledby="tx-label">${hash}</code><button class="copy" type="button" data-copy="${hash}" aria-label="Copy the transaction hash">${ICONS.copy}<span class="copy-label">Copy</span></button></div>
${link}</div>`;
}

function panels(r: PublicRefund, amount: string): string {
  const network = escapeHtml(r.network);
  return `<div id="panel-claimable"${hidden(r, 'claimable')}>
<h2>Where should the refund go?</h2>
<p class="hint">Enter the address of your wallet on <strong>${network}</strong>. The refund is sent once, to the address you give.</p>
<div class="claim">
<label for="address">Your ${escapeHtml(r.token)} address on ${network}</label>
<input id="address" name="address" type="text" inputmode="text" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="0x…" aria-describedby="error">
<p class="error" id="error" role="alert"></p>
<button type="button" class="btn btn-primary" id="send">Send my refund</button>
</div>
</div>
<div id="panel-pending" class="result result-pending"${hidden(r, 'pending')}>
<div class="result-icon">${ICONS.clock}</div>
<h2>Refund sent</h2>
<p>${escapeHtml(amount)} is on its way on ${network}. This page updates when the network confirms it.</p>
${sentTo(r)}
</div>
<div id="panel-confirmed" class="result result-confirmed"${hidden(r, 'confirmed')}>
<div class="result-icon">${ICONS.check}</div>
<h2>Refund confirmed</h2>
<p>${escapeHtml(amount)} has arrived at your address on ${network}.</p>
${sentTo(r)}
</div>
<div id="panel-failed" class="result result-failed"${hidden(r, 'failed')}>
<div class="result-icon">${ICONS.alert}</div>
<h2>The refund could not be sent</h2>
<p>Please contact the merchant.</p>
${sentTo(r)}
</div>
<div id="panel-expired" class="result result-expired"${hidden(r, 'expired')}>
<div class="result-icon">${ICONS.clock}</div>
<h2>This refund link has expired</h2>
<p>Please contact the merchant for a new one.</p>
</div>`;
}

/** The whole page for a refund as its payer may see it. */
export function refundPage(r: PublicRefund): string {
  const amount = `${r.amount.replace(/\.?0+$/, '')} ${r.token}`;
  const badge = BADGES[r.status] ?? BADGES.claimable!;
  const key = `${r.status}|${r.address ?? ''}|${r.tx_hash ?? ''}`;
  const body = `<main class="checkout" id="refund" data-uuid="${escapeHtml(r.uuid)}" data-status="${escapeHtml(r.status)}" data-key="${escapeHtml(key)}">
<div class="summary">
<div class="merchant"><span class="mark">${ICONS.mark}</span><span>Refund</span></div>
<h1>Your refund of ${escapeHtml(amount)}</h1>
${r.reason === null ? '' : `<div class="reason"><span class="label" id="reason-label">Reason from the merchant</span><p id="reason" aria-labelledby="reason-label">${escapeHtml(r.reason)}</p></div>`}
<dl class="facts">
<div><dt>Status</dt><dd><span class="badge ${badge[1]}" id="badge">${badge[0]}</span></dd></div>
<div><dt>Network</dt><dd id="network">${escapeHtml(r.network)}</dd></div>
${r.expires_at === null ? '' : `<div id="claim-by-row"${hidden(r, 'claimable')}><dt>Claim by</dt><dd>${escapeHtml(r.expires_at)} UTC</dd></div>`}
</dl>
</div>
<section class="card" aria-label="Refund">
${panels(r, amount)}
</section>
<p class="footer">Refund reference <code>${escapeHtml(r.uuid)}</code></p>
</main>
<script>${REFUND_JS}</script>`;
  return document(`Refund of ${amount}`, body, REFUND_CSS);
}

/** The page for an unknown or malformed uuid (served with 404). */
export function refundNotFoundPage(): string {
  return document(
    'Refund not found',
    `<main class="lost"><div class="card" role="alert">
<div class="result result-expired"><div class="result-icon">${ICONS.alert}</div>
<h1>Refund not found</h1>
<p>This refund link is not valid. Check the link you were given, or ask the merchant.</p></div>
</div></main>`,
  );
}
