/**
 * The dashboard (docs/architecture.md, "The dashboard: its stack, and why"): Preact views over the
 * public API, routed by the URL's hash (#/ the wallets, #/wallet/{id} one wallet), one script and
 * one stylesheet from the service's own origin.
 */
import { render, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';
import { api, failure, session, type Data } from './api.js';
import { Time, Hash, Loading, Problem, Empty, StatusBadge, Amount, Notice } from './ui.js';
import { ChargeDetail, Keys, Payouts, Policy, Webhooks } from './actions.js';
import { Chart, Events, Reconciliation } from './insights.js';

type Route =
  | { view: 'wallets' }
  | { view: 'keys' }
  | { view: 'events' }
  | { view: 'wallet'; id: string }
  | { view: 'charge'; id: string; charge: string };

function parseRoute(hash: string): Route {
  if (hash === '#/keys') return { view: 'keys' };
  if (hash === '#/events') return { view: 'events' };
  const c = /^#\/wallet\/([1-9][0-9]*)\/charge\/([1-9][0-9]*)$/.exec(hash);
  if (c) return { view: 'charge', id: c[1], charge: c[2] };
  const m = /^#\/wallet\/([1-9][0-9]*)$/.exec(hash);
  return m ? { view: 'wallet', id: m[1] } : { view: 'wallets' };
}

function useRoute(): Route {
  const [route, setRoute] = useState(parseRoute(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const { data, error: err } = await api
      .POST('/api/auth/login', { body: { email, password } })
      .catch(() => ({ data: undefined, error: { message: 'The service could not be reached.' } }));
    setBusy(false);
    if (!data) return setError(failure(err, 'Signing in failed.'));
    session.set(data.data.token);
    onSignedIn();
  };
  return (
    <main class="signin">
      <form class="card" onSubmit={(e) => void submit(e)} aria-labelledby="signin-title">
        <h1 id="signin-title">Wallet service</h1>
        <p class="muted">Sign in to see your wallets.</p>
        <label for="email">Email</label>
        <input
          id="email"
          name="email"
          type="email"
          autocomplete="username"
          required
          value={email}
          onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
        />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
        />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

interface WalletSummary {
  id: number;
  name: string;
  address: string;
  network: string;
  explorer: string;
  chainId: number | null;
  balances: { symbol: string; balance: string }[] | null;
  error: string | null;
}

async function loadWallet(id: number, name: string, address: string): Promise<WalletSummary> {
  const [shown, balance] = await Promise.all([
    api.GET('/api/wallet/{wallet}', { params: { path: { wallet: String(id) } } }),
    api.GET('/api/wallet/{wallet}/balance', { params: { path: { wallet: String(id) } } }),
  ]);
  const network = shown.data?.data.network;
  return {
    id,
    name,
    address,
    network: network?.name ?? '',
    explorer: network?.block_explorer ?? '',
    chainId: network?.chain_id ?? null,
    balances: balance.data ? balance.data.data.tokens.map((t) => ({ symbol: t.symbol, balance: t.balance })) : null,
    error: balance.data ? null : failure(balance.error, 'The balance could not be read.'),
  };
}

function Wallets() {
  const [wallets, setWallets] = useState<WalletSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    (async () => {
      const { data, error: err } = await api.GET('/api/wallets');
      if (!data) return setError(failure(err, 'The wallets could not be listed.'));
      setWallets(await Promise.all(data.data.map((w) => loadWallet(w.id, w.name, w.address))));
    })().catch(() => setError('The service could not be reached.'));
  }, []);
  if (error) return <Problem text={error} />;
  if (!wallets) return <Loading what="wallets" />;
  if (wallets.length === 0) return <Empty text="No wallets yet. Create one with POST /api/wallet/create." />;
  return (
    <section aria-labelledby="wallets-title">
      <h1 id="wallets-title">Wallets</h1>
      <ul class="cards">
        {wallets.map((w) => (
          <li class="card wallet" key={w.id}>
            <h2>
              <a href={`#/wallet/${w.id}`}>{w.name}</a>
            </h2>
            <p class="muted">{w.network}</p>
            <p class="mono address">{w.address}</p>
            {w.error && <p class="error">{w.error}</p>}
            {w.balances && (
              <dl class="balances" aria-label={`Balances of ${w.name}`}>
                {w.balances.map((b) => (
                  <div key={b.symbol}>
                    <dt>{b.symbol}</dt>
                    <dd>
                      <Amount value={b.balance} />
                    </dd>
                  </div>
                ))}
              </dl>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

const PAGE = 20;

/** A list read from the API: its rows, or what went wrong in words; `null` rows while loading. */
function useList<T>(load: () => Promise<{ rows: T[] } | { error: string }>, deps: unknown[]): { rows: T[] | null; error: string | null } {
  const [rows, setRows] = useState<T[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setRows(null);
    load()
      .then((r) => ('error' in r ? setError(r.error) : setRows(r.rows)))
      .catch(() => setError('The service could not be reached.'));
  }, deps);
  return { rows, error };
}

/** Loading, error and empty states around a table that scrolls sideways on a phone. */
function Listing({
  label,
  rows,
  error,
  empty,
  children,
}: {
  label: string;
  rows: unknown[] | null;
  error: string | null;
  empty: string;
  children: ComponentChildren;
}) {
  if (error) return <Problem text={error} />;
  if (!rows) return <Loading what={label.toLowerCase()} />;
  if (rows.length === 0) return <Empty text={empty} />;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={`${label}, scrollable`}>
      {children}
    </div>
  );
}

function Transactions({ wallet, explorer }: { wallet: string; explorer: string }) {
  const [page, setPage] = useState(1);
  const [pages, setPages] = useState(1);
  const [version, setVersion] = useState(0);
  const [message, setMessage] = useState<string | null>(null);
  const decide = async (id: number, kind: 'approve' | 'reject') => {
    const path = { wallet, transaction: String(id) };
    const r =
      kind === 'approve'
        ? await api.POST('/api/wallet/{wallet}/transaction/{transaction}/approve', { params: { path } })
        : await api.POST('/api/wallet/{wallet}/transaction/{transaction}/reject', { params: { path } });
    setMessage(
      r.data
        ? `Transaction ${id} ${kind === 'approve' ? 'approved' : 'rejected'}.`
        : failure(r.error, `The transaction could not be ${kind === 'approve' ? 'approved' : 'rejected'}.`),
    );
    setVersion(version + 1);
  };
  const { rows, error } = useList<Data<'/api/wallet/{wallet}/transaction'>[number]>(async () => {
    const {
      data,
      error: err,
      response,
    } = await api.GET('/api/wallet/{wallet}/transaction', { params: { path: { wallet }, query: { page, limit: PAGE } } });
    if (!data) return { error: failure(err, 'The transactions could not be listed.') };
    setPages(Number(response.headers.get('x-pagination-pages') ?? '1') || 1);
    return { rows: data.data };
  }, [wallet, page, version]);
  return (
    <section aria-labelledby="tx-title">
      <h2 id="tx-title">Transactions</h2>
      <Notice message={message} />
      <Listing label="Transactions" rows={rows} error={error} empty="No transactions yet.">
        <table>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Type</th>
              <th scope="col">Amount</th>
              <th scope="col">Hash</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows?.map((t) => (
              <tr key={t.id} data-transaction={t.id}>
                <td data-label="Status">
                  <StatusBadge status={t.status} />
                  {t.status === 'awaiting_approval' && (
                    <span class="actions">
                      <button type="button" onClick={() => void decide(t.id, 'approve')} aria-label={`Approve transaction ${t.id}`}>
                        Approve
                      </button>
                      <button type="button" onClick={() => void decide(t.id, 'reject')} aria-label={`Reject transaction ${t.id}`}>
                        Reject
                      </button>
                    </span>
                  )}
                </td>
                <td data-label="Type">{t.type}</td>
                <td class="num" data-label="Amount">
                  <Amount value={t.amount} symbol={t.symbol} />
                </td>
                <td data-label="Hash">
                  {t.tx_hash ? <Hash hash={t.tx_hash} explorer={explorer} /> : <span class="muted">not signed</span>}
                </td>
                <td data-label="Created">
                  <Time utc={t.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Listing>
      <nav class="pager" aria-label="Transaction pages">
        <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
          Newer
        </button>
        <span>
          Page {page} of {pages}
        </span>
        <button type="button" disabled={page >= pages} onClick={() => setPage(page + 1)}>
          Older
        </button>
      </nav>
    </section>
  );
}

function Charges({ wallet }: { wallet: string }) {
  const { rows, error } = useList<Data<'/api/wallet/{wallet}/charge'>[number]>(async () => {
    const { data, error: err } = await api.GET('/api/wallet/{wallet}/charge', { params: { path: { wallet }, query: { limit: PAGE } } });
    return data ? { rows: data.data } : { error: failure(err, 'The charges could not be listed.') };
  }, [wallet]);
  return (
    <section aria-labelledby="charges-title">
      <h2 id="charges-title">Charges</h2>
      <Listing label="Charges" rows={rows} error={error} empty="No charges yet.">
        <table>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Amount</th>
              <th scope="col">Paid</th>
              <th scope="col">Payments</th>
              <th scope="col">Refunds</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows?.map((c) => (
              <tr key={c.id} data-charge={c.id}>
                <td data-label="Status">
                  <a href={`#/wallet/${wallet}/charge/${c.id}`} aria-label={`Charge ${c.id}: ${c.status}`}>
                    <StatusBadge status={c.status} />
                  </a>
                </td>
                <td class="num" data-label="Amount">
                  <Amount value={c.amount} symbol={c.token} />
                </td>
                <td class="num" data-label="Paid">
                  <Amount value={c.paid_amount} symbol={c.token} />
                </td>
                <td data-label="Payments">{c.payments.length}</td>
                <td data-label="Refunds">{c.refunds.length}</td>
                <td data-label="Created">
                  <Time utc={c.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Listing>
    </section>
  );
}

/** The local devnet's "Fund from devnet" (anvil's dev account sends ETH in a real transfer). */
function FundFromDevnet({ wallet, onFunded }: { wallet: string; onFunded: () => void }) {
  const [value, setValue] = useState('1');
  const [message, setMessage] = useState<{ error: boolean; text: string } | null>(null);
  const fund = async (e: Event) => {
    e.preventDefault();
    const r = await api
      .POST('/api/wallet/{wallet}/devnet/fund', { params: { path: { wallet } }, body: { amount: value.trim() } })
      .catch(() => ({ data: undefined, error: undefined }));
    setMessage(
      r.data
        ? { error: false, text: `Funded with ${r.data.data.amount.replace(/0+$/, '').replace(/\.$/, '')} ETH from the devnet.` }
        : { error: true, text: failure(r.error, 'The wallet could not be funded.') },
    );
    if (r.data) onFunded();
  };
  return (
    <form class="inline-form" onSubmit={(e) => void fund(e)} aria-label="Fund from the local devnet">
      <label for="fund-amount">ETH from the local devnet</label>
      <input
        id="fund-amount"
        inputMode="decimal"
        autocomplete="off"
        value={value}
        onInput={(e) => setValue((e.target as HTMLInputElement).value)}
      />
      <button type="submit" class="primary">
        Fund from devnet
      </button>
      <Notice message={message} />
    </form>
  );
}

function Wallet({ id }: { id: string }) {
  const [w, setW] = useState<WalletSummary | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    (async () => {
      const { data, error: err } = await api.GET('/api/wallet/{wallet}', { params: { path: { wallet: id } } });
      if (!data) return setError(failure(err, 'The wallet could not be read.'));
      setW(await loadWallet(data.data.id, data.data.name, data.data.address));
    })().catch(() => setError('The service could not be reached.'));
  }, [id, version]);
  if (error) return <Problem text={error} />;
  if (!w) return <Loading what="the wallet" />;
  return (
    <div class="stack">
      <section aria-labelledby="wallet-title" class="card">
        <p>
          <a href="#/">← Wallets</a>
        </p>
        <h1 id="wallet-title">{w.name}</h1>
        <p class="muted">{w.network}</p>
        <p class="mono address">{w.address}</p>
        {w.error && <p class="error">{w.error}</p>}
        {w.balances && (
          <dl class="balances" aria-label={`Balances of ${w.name}`}>
            {w.balances.map((b) => (
              <div key={b.symbol}>
                <dt>{b.symbol}</dt>
                <dd>
                  <Amount value={b.balance} />
                </dd>
              </div>
            ))}
          </dl>
        )}
        {w.chainId === 31337 && <FundFromDevnet wallet={id} onFunded={() => setVersion(version + 1)} />}
      </section>
      <Chart wallet={id} />
      <Transactions wallet={id} explorer={w.explorer} />
      <Charges wallet={id} />
      <Payouts wallet={id} />
      <Webhooks wallet={id} />
      <Policy wallet={id} />
      <Reconciliation wallet={id} />
    </div>
  );
}

function View({ route }: { route: Route }) {
  if (route.view === 'keys') return <Keys />;
  if (route.view === 'events') return <Events />;
  if (route.view === 'wallet') return <Wallet id={route.id} />;
  if (route.view === 'charge') return <ChargeOf wallet={route.id} charge={route.charge} />;
  return <Wallets />;
}

/** A charge's view needs its wallet's explorer for the payment links. */
function ChargeOf({ wallet, charge }: { wallet: string; charge: string }) {
  const [explorer, setExplorer] = useState<string | null>(null);
  useEffect(() => {
    api
      .GET('/api/wallet/{wallet}', { params: { path: { wallet } } })
      .then((r) => setExplorer(r.data?.data.network.block_explorer ?? ''))
      .catch(() => setExplorer(''));
  }, [wallet]);
  return explorer === null ? <Loading what="the charge" /> : <ChargeDetail wallet={wallet} charge={charge} explorer={explorer} />;
}

function App() {
  const [signedIn, setSignedIn] = useState(session.token() !== null);
  const route = useRoute();
  useEffect(() => {
    const out = () => setSignedIn(false);
    window.addEventListener('signed-out', out);
    return () => window.removeEventListener('signed-out', out);
  }, []);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const signOut = async () => {
    await api.POST('/api/auth/logout').catch(() => undefined);
    session.clear();
    setSignedIn(false);
  };
  return (
    <>
      <header class="top">
        <a href="#/" class="brand">
          Wallet service
        </a>
        <nav aria-label="Main">
          <a href="#/">Wallets</a>
          <a href="#/keys">API keys</a>
          <a href="#/events">Events</a>
        </nav>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main class="page">
        <View route={route} />
      </main>
    </>
  );
}

const root = document.getElementById('app')!;
root.textContent = ''; // the server's "Loading the dashboard…"
render(<App />, root);
