/**
 * The refund claim page (`GET /refund/{uuid}`), built like the checkout page: rendered on the
 * server with the refund's state, the checkout stylesheet plus a few rules of its own, one
 * inline script; everything allowed by hash in its Content-Security-Policy, nothing from
 * another host. The payer types an address and sends it (`POST /api/refund/{uuid}`, no HTML
 * form: the policy has `form-action 'none'`); the page then polls `GET /api/refund/{uuid}` and
 * shows the refund sent, then confirmed, without a reload.
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
`;

export const REFUND_JS = `
(function () {
  'use strict';
  var root = document.getElementById('refund');
  var uuid = root.getAttribute('data-uuid');
  var status = root.getAttribute('data-status');
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
  function poll() {
    fetch('/api/refund/' + encodeURIComponent(uuid), { headers: { accept: 'application/json' }, cache: 'no-store' })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (body) { if (body && body.data) { status = body.data.status; render(); } })
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
        if (r.ok && r.body.data) { status = r.body.data.status; render(); setTimeout(poll, POLL_MS); return; }
        var errors = r.body && r.status === 422 && r.body.data;
        fail(errors && errors.address ? errors.address[0] : (r.body && r.body.message) || 'The refund could not be sent.');
        if (r.body && /claimed|expired/i.test(r.body.message || '')) poll();
      })
      .catch(function () { fail('The service could not be reached. Try again.'); })
      .then(function () { $('send').disabled = false; });
  });
  render();
  if (!final() && status !== 'claimable') setTimeout(poll, POLL_MS);
})();
`;

/** The checkout page's policy with this page's script, and its stylesheet after the checkout one. */
export const REFUND_CSP = pagePolicy({ scripts: [inlineHash(REFUND_JS)], styles: [inlineHash(CHECKOUT_CSS), inlineHash(REFUND_CSS)] });

const hidden = (r: PublicRefund, s: string) => (r.status === s ? '' : ' hidden');

function panels(r: PublicRefund, amount: string): string {
  return `<div id="panel-claimable"${hidden(r, 'claimable')}>
<h2>Where should the refund go?</h2>
<p class="hint">Enter the address of your wallet on this network. The refund is sent once, to the address you give.</p>
<div class="claim">
<label for="address">Your ${escapeHtml(r.token)} address</label>
<input id="address" name="address" type="text" inputmode="text" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="0x…" aria-describedby="error">
<p class="error" id="error" role="alert"></p>
<button type="button" class="btn btn-primary" id="send">Send my refund</button>
</div>
</div>
<div id="panel-pending" class="result result-pending"${hidden(r, 'pending')}>
<div class="result-icon">${ICONS.clock}</div>
<h2>Refund sent</h2>
<p>${escapeHtml(amount)} is on its way. This page updates when the network confirms it.</p>
</div>
<div id="panel-confirmed" class="result result-confirmed"${hidden(r, 'confirmed')}>
<div class="result-icon">${ICONS.check}</div>
<h2>Refund confirmed</h2>
<p>${escapeHtml(amount)} has arrived at your address.</p>
</div>
<div id="panel-failed" class="result result-failed"${hidden(r, 'failed')}>
<div class="result-icon">${ICONS.alert}</div>
<h2>The refund could not be sent</h2>
<p>Please contact the merchant.</p>
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
  const body = `<main class="checkout" id="refund" data-uuid="${escapeHtml(r.uuid)}" data-status="${escapeHtml(r.status)}">
<div class="summary">
<div class="merchant"><span class="mark">${ICONS.mark}</span><span>Refund</span></div>
<h1>Your refund of ${escapeHtml(amount)}</h1>
<dl class="facts">
<div><dt>Status</dt><dd><span class="badge ${badge[1]}" id="badge">${badge[0]}</span></dd></div>
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
