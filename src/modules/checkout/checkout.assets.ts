/**
 * The checkout page's own stylesheet and script, inlined in the page and allowed by their
 * SHA-256 in its Content-Security-Policy (no `'unsafe-inline'`, nothing from another host, no
 * extra request). The script is plain ES2020 with no dependency: it counts down to
 * `expires_at` by the service's clock and takes the payment panel away when time is up, copies
 * the address, amount and hashes, shows the token a price charge's payer picks (its amount, QR
 * code and wallet link, all rendered by the server; the choice is kept across updates), and
 * polls `GET /api/pay/{uuid}`; when what the page shows changed it takes the new parts from a
 * fresh render of the page, so every text is the server's (checkout.page.ts), never written
 * twice.
 */
import { createHash } from 'node:crypto';

export const CHECKOUT_CSS = `
*,*::before,*::after{box-sizing:border-box}
:root{--bg:#f3f5f9;--card:#fff;--text:#0f172a;--muted:#475569;--line:#e2e8f0;--soft:#f8fafc;--accent:#4338ca;--accent-hover:#3730a3;
font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--text);background:var(--bg);line-height:1.5}
body{margin:0;min-height:100vh;background:var(--bg);-webkit-font-smoothing:antialiased;text-rendering:optimizeLegibility}
[hidden]{display:none!important}
.checkout{max-width:980px;margin:0 auto;padding:20px 16px 32px;display:grid;gap:20px}
.summary{padding:4px 4px 0}
.merchant{display:flex;align-items:center;gap:10px;font-weight:600;color:var(--muted);font-size:.95rem}
.mark{width:34px;height:34px;border-radius:10px;background:linear-gradient(135deg,#4f46e5,#7c3aed);display:grid;place-items:center;color:#fff;flex:none}
.mark svg{width:18px;height:18px}
.mode{margin-left:auto;font-size:.7rem;font-weight:700;letter-spacing:.08em;text-transform:uppercase;background:#fff7ed;color:#9a3412;border:1px solid #fed7aa;padding:2px 9px;border-radius:999px}
h1{font-size:1.35rem;line-height:1.3;margin:18px 0 4px;letter-spacing:-.01em;overflow-wrap:anywhere}
.description{color:var(--muted);margin:0;white-space:pre-line;overflow-wrap:anywhere}
.due{margin:18px 0 14px}
.label{display:block;font-size:.75rem;text-transform:uppercase;letter-spacing:.08em;color:var(--muted);font-weight:650;margin:0 0 4px}
.amount{font-size:2.25rem;font-weight:750;letter-spacing:-.025em;line-height:1.1;margin:0;overflow-wrap:anywhere;font-variant-numeric:tabular-nums}
.amount .token{font-size:1.15rem;font-weight:650;color:var(--muted);letter-spacing:0;margin-left:4px}
.facts{margin:0;border-top:1px solid var(--line)}
.facts>div{display:flex;justify-content:space-between;align-items:center;padding:11px 0;border-bottom:1px solid var(--line);gap:16px}
.facts dt{color:var(--muted)}
.facts dd{margin:0;font-weight:600;text-align:right}
.badge{display:inline-flex;align-items:center;gap:7px;padding:3px 11px;border-radius:999px;font-size:.85rem;font-weight:650;white-space:nowrap}
.badge::before{content:"";width:8px;height:8px;border-radius:50%;background:currentColor}
.badge-pending{background:#fef3c7;color:#854d0e}
.badge-partial{background:#ffedd5;color:#9a3412}
.badge-paid{background:#dcfce7;color:#166534}
.badge-expired{background:#e2e8f0;color:#334155}
.badge-failed{background:#fee2e2;color:#991b1b}
.badge-confirming{background:#dbeafe;color:#1e40af}
.badge-late{background:#ffedd5;color:#9a3412}
.badge-pending::before,.badge-partial::before,.badge-confirming::before{animation:pulse 1.6s ease-in-out infinite}
@keyframes pulse{50%{opacity:.25}}
.countdown{font-variant-numeric:tabular-nums}
.countdown.soon{color:#b91c1c}
.card{background:var(--card);border:1px solid var(--line);border-radius:18px;box-shadow:0 1px 2px rgba(15,23,42,.05),0 16px 40px -12px rgba(15,23,42,.14);padding:22px}
.card h2{font-size:1.1rem;margin:0 0 2px;letter-spacing:-.01em}
.hint{color:var(--muted);margin:0 0 16px;font-size:.95rem}
.hint strong{color:var(--text)}
.qr{display:flex;justify-content:center;padding:14px;border:1px solid var(--line);border-radius:14px;margin:0 auto 18px;background:#fff;width:max-content}
.qr img{width:196px;height:196px;display:block}
.copy-field{display:flex;align-items:stretch;border:1px solid var(--line);border-radius:11px;background:var(--soft);margin:0 0 14px;overflow:hidden}
.copy-field .unit{align-self:center;padding:0 12px 0 0;color:var(--muted);font-weight:600;font-size:.88rem}
.copy-field code{flex:1;min-width:0;padding:10px 12px;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.88rem;word-break:break-all;line-height:1.5;color:var(--text);align-self:center}
.copy{flex:none;display:inline-flex;align-items:center;justify-content:center;gap:6px;min-width:96px;border:0;border-left:1px solid var(--line);background:#fff;color:var(--accent);font:inherit;font-weight:650;font-size:.875rem;padding:0 14px;cursor:pointer}
.copy svg{width:16px;height:16px}
.copy:hover{background:#eef2ff}
.copy.copied{color:#166534;background:#f0fdf4}
.copy:focus-visible,.btn:focus-visible,.link:focus-visible{outline:3px solid #a5b4fc;outline-offset:2px}
.picker{border:0;margin:14px 0 16px;padding:0;min-width:0}
.picker legend{padding:0}
.choices{display:grid;grid-template-columns:repeat(auto-fit,minmax(132px,1fr));gap:8px}
.choice{display:grid;grid-template-columns:auto minmax(0,1fr);column-gap:10px;align-items:center;border:1px solid #cbd5e1;border-radius:11px;padding:10px 12px;background:#fff;cursor:pointer}
.choice input{grid-row:1/3;width:18px;height:18px;margin:0;accent-color:var(--accent);cursor:pointer}
.choice-token{font-weight:700;line-height:1.3}
.choice-amount{color:var(--muted);font-size:.88rem;line-height:1.35;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.choice:hover{border-color:var(--accent)}
.choice:has(input:checked){border-color:var(--accent);background:#eef2ff;box-shadow:inset 0 0 0 1px var(--accent)}
.choice:has(input:focus-visible){outline:3px solid #a5b4fc;outline-offset:2px}
.btn{display:flex;justify-content:center;align-items:center;gap:8px;width:100%;padding:13px 16px;border-radius:11px;font-weight:650;text-decoration:none;font-size:1rem;margin-top:4px}
.btn-primary{background:var(--accent);color:#fff}
.btn-primary:hover{background:var(--accent-hover)}
.btn svg{width:18px;height:18px}
.btn-secondary{background:#fff;color:var(--accent);border:1px solid var(--line);font:inherit;font-weight:650;cursor:pointer;margin-top:10px}
.btn-secondary:hover{background:#eef2ff}
.btn-secondary:disabled{cursor:progress;opacity:.7}
.note{border-radius:11px;padding:10px 12px;font-size:.9rem;margin:0 0 16px}
.note-warn{background:#fff7ed;color:#9a3412;border:1px solid #fed7aa}
.result{text-align:center;padding:20px 4px 8px}
.result h2{font-size:1.3rem;margin:0 0 6px}
.result p{color:var(--muted);margin:0 0 6px}
.result-icon{width:68px;height:68px;border-radius:50%;display:grid;place-items:center;margin:0 auto 16px}
.result-icon svg{width:34px;height:34px}
.result-paid .result-icon{background:#dcfce7;color:#15803d}
.result-expired .result-icon{background:#e2e8f0;color:#334155}
.result-failed .result-icon{background:#fee2e2;color:#b91c1c}
.result-confirming .result-icon{background:#dbeafe;color:#1e40af}
.result-late .result-icon{background:#ffedd5;color:#c2410c}
.txs{list-style:none;margin:16px 0 0;padding:0;display:grid;gap:12px;text-align:left}
.txs .tx-amount{margin:0 0 4px;font-weight:650;color:var(--text)}
.txs .copy-field{margin:0 0 6px}
.txs .explorer-link{justify-content:flex-start}
.late-note{text-align:left;margin:18px 0 0}
.late-note p,.refund-note p{color:inherit;margin:0}
.note-info{background:#eff6ff;color:#1e3a8a;border:1px solid #bfdbfe}
.refund-note{text-align:left;margin:18px 0 0}
.missing{display:inline-block;margin:10px 0 6px;font-weight:700;color:#991b1b;font-size:1.05rem}
.links{display:flex;flex-direction:column;align-items:center;gap:6px;margin-top:12px}
.link{display:inline-flex;flex-wrap:wrap;justify-content:center;align-items:center;gap:2px 6px;max-width:100%;font-size:.95rem;color:var(--accent);font-weight:650;text-decoration:none}
.link:hover{text-decoration:underline}
.link .hash{white-space:nowrap;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
.footer{color:var(--muted);font-size:.8rem;text-align:center;margin:0;overflow-wrap:anywhere}
.footer code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.lost{max-width:472px;margin:14vh auto 0;padding:0 16px;text-align:center}
.lost .card{padding:36px 28px}
.lost h1{font-size:1.3rem;margin:0 0 6px}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (min-width:860px){
.checkout{grid-template-columns:minmax(0,1fr) 420px;column-gap:56px;row-gap:28px;align-items:start;padding:72px 32px 40px}
.summary{padding-top:18px}
h1{font-size:1.6rem;margin-top:28px}
.due{margin:28px 0 22px}
.amount{font-size:2.75rem}
.card{padding:28px}
.footer{grid-column:1/-1}
}
@media (prefers-reduced-motion:reduce){.badge::before{animation:none!important}}
`;

export const CHECKOUT_JS = `
(function () {
  'use strict';
  var root = document.getElementById('checkout');
  if (!root) return;
  var d = root.dataset;
  var POLL_MS = 3000;
  var SETTLED_POLL_MS = 10000;
  var OPEN = ['awaiting', 'partial'];
  var SETTLED = ['paid', 'expired', 'failed', 'late'];
  var expiresMs = Number(d.expiresMs);
  // The service's clock, never the device's: \`server\` was read no later than \`at\` on this page's
  // monotonic clock (0 is the navigation's start, before the server rendered the page; a poll's
  // answer is taken as of the poll's start), so the page may close a moment early, never late.
  var sync = { server: Number(d.nowMs), at: 0 };
  var $ = function (id) { return document.getElementById(id); };

  function serverNow() { return sync.server + (performance.now() - sync.at); }
  function clock(ms) {
    var s = Math.max(0, Math.ceil(ms / 1000));
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    var p = function (n) { return String(n).padStart(2, '0'); };
    return h > 0 ? h + ':' + p(m) + ':' + p(sec) : p(m) + ':' + p(sec);
  }
  function isOpen() { return OPEN.indexOf(d.state) >= 0; }

  /** Expired by the clock: the page stops taking payment, whatever the chain's blocks say yet. */
  function close() {
    var pay = $('panel-pay');
    if (pay) pay.remove();
    var closed = $('panel-closed');
    if (closed) closed.hidden = false;
    d.state = 'closed';
    var badge = $('status-badge');
    badge.className = 'badge badge-expired';
    badge.textContent = 'Expired';
    $('countdown-row').hidden = true;
    $('amount-label').textContent = $('amount-label').getAttribute('data-closed');
    document.title = 'Expired \\u00b7 ' + d.pageTitle;
    $('announce').textContent = 'This payment request has expired.';
  }

  function tick() {
    if (!isOpen()) return;
    var left = expiresMs - serverNow();
    if (left <= 0) { close(); return; }
    var el = $('countdown');
    el.textContent = clock(left);
    el.classList.toggle('soon', left < 60000);
  }

  /** What the page shows changed: its parts are taken from a fresh render of this page. */
  function refresh(at) {
    return fetch(location.pathname, { cache: 'no-store' })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, 'text/html');
        var main = fresh.getElementById('checkout');
        if (!main) return;
        $('card').innerHTML = fresh.getElementById('card').innerHTML;
        if (picked !== null) pick(picked);
        var badge = fresh.getElementById('status-badge');
        $('status-badge').className = badge.className;
        $('status-badge').textContent = badge.textContent;
        $('countdown-row').hidden = fresh.getElementById('countdown-row').hidden;
        $('amount-label').textContent = fresh.getElementById('amount-label').textContent;
        document.title = fresh.title;
        d.state = main.dataset.state;
        d.key = main.dataset.key;
        sync = { server: Number(main.dataset.nowMs), at: at };
        $('announce').textContent = badge.textContent;
        tick();
      })
      .catch(function () { /* the page shown stays until the next poll */ });
  }

  function changeKey(c) {
    var ps = c.payments.map(function (p) { return (p.tx_hash || '-') + ':' + (p.confirmed ? 1 : 0) + ':' + (p.late ? 1 : 0); });
    var rs = c.refunds.map(function (r) { return (r.tx_hash || '-') + ':' + (r.confirmed ? 1 : 0); });
    return [c.state, c.paid_amount, ps.join(','), rs.join(',')].join('|');
  }

  // Also once settled, more slowly: a payment after the expiry is shown as late, not missed.
  function poll() {
    var at = performance.now();
    fetch('/api/pay/' + encodeURIComponent(d.uuid), { headers: { accept: 'application/json' }, cache: 'no-store' })
      .then(function (res) { return res.ok ? res.json() : null; })
      .then(function (body) {
        if (!body || !body.data) return;
        sync = { server: body.data.now_ms, at: at };
        if (changeKey(body.data) !== d.key) return refresh(at);
        tick();
      })
      .catch(function () { /* offline for a moment: the next poll tries again */ })
      .then(function () { setTimeout(poll, SETTLED.indexOf(d.state) >= 0 ? SETTLED_POLL_MS : POLL_MS); });
  }

  // A price charge's token picker: the chosen quote's parts (data-quote) are shown, the others hidden.
  var picked = null;
  function pick(value) {
    var radio = root.querySelector('input[name="quote"][value="' + value + '"]');
    if (!radio) return;
    radio.checked = true;
    picked = value;
    root.querySelectorAll('[data-quote]').forEach(function (el) { el.hidden = el.getAttribute('data-quote') !== value; });
  }
  root.addEventListener('change', function (e) {
    var el = e.target;
    if (el instanceof HTMLInputElement && el.name === 'quote' && el.checked) pick(el.value);
  });

  function copied(btn) {
    var label = btn.querySelector('.copy-label');
    btn.classList.add('copied');
    label.textContent = 'Copied';
    $('announce').textContent = 'Copied to the clipboard';
    setTimeout(function () { btn.classList.remove('copied'); label.textContent = 'Copy'; }, 1800);
  }
  function fallbackCopy(text) {
    var area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.className = 'sr';
    document.body.appendChild(area);
    area.select();
    try { document.execCommand('copy'); } finally { document.body.removeChild(area); }
  }
  function copy(btn) {
    var text = btn.getAttribute('data-copy');
    var done = function () { copied(btn); };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    else { fallbackCopy(text); done(); }
  }

  // The local devnet's payer button (README "Start"): the dev account pays; the poll shows it.
  function devnetPay(dev) {
    dev.disabled = true;
    dev.textContent = 'Paying\\u2026';
    fetch('/api/pay/' + encodeURIComponent(d.uuid) + '/devnet', { method: 'POST', headers: { accept: 'application/json' } })
      .then(function (res) { return res.json(); })
      .then(function (body) { dev.textContent = body && body.status === 'success' ? 'Sent from the devnet' : (body && body.message) || 'Could not pay'; })
      .catch(function () { dev.disabled = false; dev.textContent = 'Pay from the devnet'; });
  }

  // One listener for every button, also those of a refreshed card.
  root.addEventListener('click', function (e) {
    var el = e.target instanceof Element ? e.target : null;
    var btn = el && el.closest('[data-copy]');
    if (btn) { copy(btn); return; }
    var dev = el && el.closest('#devnet-pay');
    if (dev && !dev.disabled) devnetPay(dev);
  });

  tick();
  setInterval(tick, 1000);
  setTimeout(poll, POLL_MS);
})();
`;

/** The CSP source of an inline block: its SHA-256, base64. */
export function inlineHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/**
 * The policy of a page of this service (the checkout, the refund claim, the dashboard): only
 * this origin, the given script and style sources (inline blocks by their hash, or `'self'` for
 * files of this origin), images from this origin or data: (the QR code), requests to this
 * origin only; no frames, forms, plugins or <base>.
 */
export function pagePolicy(sources: { scripts: string[]; styles: string[] }): string {
  return [
    "default-src 'self'",
    `script-src ${sources.scripts.join(' ')}`,
    `style-src ${sources.styles.join(' ')}`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

/** The checkout page's policy: its one inline script and its one inline stylesheet, by hash. */
export const CHECKOUT_CSP = pagePolicy({ scripts: [inlineHash(CHECKOUT_JS)], styles: [inlineHash(CHECKOUT_CSS)] });
