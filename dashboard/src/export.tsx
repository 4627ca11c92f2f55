/**
 * The `Export CSV` button of the transactions, charges and payouts lists: the file fetched with
 * the session's token (the dashboard authenticates with a header, so a plain link would not
 * be), then saved from a blob. All rows, unfiltered (docs/exports.md).
 */
import { useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { Problem } from './ui.js';

type Kind = 'transactions' | 'charges' | 'payouts';

function fetchCsv(wallet: string, kind: Kind) {
  const params = { path: { wallet } };
  if (kind === 'transactions') return api.GET('/api/wallet/{wallet}/export/transactions.csv', { params, parseAs: 'blob' });
  if (kind === 'charges') return api.GET('/api/wallet/{wallet}/export/charges.csv', { params, parseAs: 'blob' });
  return api.GET('/api/wallet/{wallet}/export/payouts.csv', { params, parseAs: 'blob' });
}

/** Saves `blob` as `filename` through a link clicked for the user. */
function save(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has taken the blob once the click is handled.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function ExportCsv({ wallet, kind }: { wallet: string; kind: Kind }) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const run = async () => {
    setBusy(true);
    setProblem(null);
    const r = await fetchCsv(wallet, kind);
    setBusy(false);
    if (r.data instanceof Blob) save(r.data, `wallet-${wallet}-${kind}.csv`);
    else setProblem(failure(r.error, 'The export could not be downloaded.'));
  };
  return (
    <div class="export">
      <button type="button" onClick={() => void run()} disabled={busy} aria-describedby={`export-${kind}-note`}>
        Export CSV
      </button>
      <span id={`export-${kind}-note`} class="muted">
        every {kind === 'payouts' ? 'payout item' : kind.slice(0, -1)}, oldest first
      </span>
      {problem && <Problem text={problem} />}
    </div>
  );
}
