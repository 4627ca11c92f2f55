/**
 * The wallets: each with its network, address and balances, and one wallet's page with all its
 * sections (chart, transactions, charges, payouts, webhooks, policy, reconciliation) and, on the
 * local devnet, `Fund from devnet`.
 */
import { useState } from 'preact/hooks';
import { api, failure, type Data } from './api.js';
import { ok, useApi } from './data.js';
import { Amount, Empty, Loading, Notice, Problem } from './ui.js';
import { Chart, Transactions } from './transactions.js';
import { Charges } from './charges.js';
import { Payouts } from './payouts.js';
import { Webhooks } from './webhooks.js';
import { Policy } from './policy.js';
import { Reconciliation } from './reconciliation.js';

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

type Shown = Data<'/api/wallet/{wallet}'>;

/** The balances of a wallet already read (its network from that read: nothing read twice). */
async function loadWallet(shown: Shown): Promise<WalletSummary> {
  const balance = await api.GET('/api/wallet/{wallet}/balance', { params: { path: { wallet: String(shown.id) } } });
  const network = shown.network;
  return {
    id: shown.id,
    name: shown.name,
    address: shown.address,
    network: network.name,
    explorer: network.block_explorer ?? '',
    chainId: network.chain_id ?? null,
    balances: balance.data ? balance.data.data.tokens.map((t) => ({ symbol: t.symbol, balance: t.balance })) : null,
    error: balance.data ? null : failure(balance.error, 'The balance could not be read.'),
  };
}

/** What changes a wallet's card: its balances, tokens, transactions and name. */
const WALLET_EVENTS = ['balance.', 'token.', 'transaction.', 'wallet.'];

/** A wallet and its balances, read again when one of its events comes. */
function useWallet(id: string) {
  return useApi(
    async () =>
      loadWallet(ok(await api.GET('/api/wallet/{wallet}', { params: { path: { wallet: id } } }), 'The wallet could not be read.').data),
    [id],
    { refreshOn: WALLET_EVENTS, wallet: id },
  );
}

/** A wallet's network, address and balances (or why they could not be read): on the list and on its page. */
function WalletFacts({ w }: { w: WalletSummary }) {
  return (
    <>
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
    </>
  );
}

export function Wallets() {
  const { data: wallets, error } = useApi(async () => ok(await api.GET('/api/wallets'), 'The wallets could not be listed.').data, [], {
    refreshOn: ['wallet.created'],
  });
  return (
    <section aria-labelledby="wallets-title">
      <h1 id="wallets-title">Wallets</h1>
      {error && <Problem text={error} />}
      {!wallets ? (
        !error && <Loading what="wallets" />
      ) : wallets.length === 0 ? (
        <Empty text="No wallets yet. Create one with POST /api/wallet/create." />
      ) : (
        <ul class="cards">
          {wallets.map((w) => (
            <WalletCard key={w.id} id={w.id} name={w.name} />
          ))}
        </ul>
      )}
    </section>
  );
}

/** One wallet of the list, read on its own: what fails is said in its card. */
function WalletCard({ id, name }: { id: number; name: string }) {
  const { data: w, error } = useWallet(String(id));
  return (
    <li class="card wallet" data-wallet={id}>
      <h2>
        <a href={`#/wallet/${id}`}>{w?.name ?? name}</a>
      </h2>
      {error && <Problem text={error} />}
      {w ? <WalletFacts w={w} /> : !error && <Loading what={`${name}`} />}
    </li>
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

export function Wallet({ id }: { id: string }) {
  const { data: w, error, reload } = useWallet(id);
  return (
    <div class="stack">
      <section aria-labelledby="wallet-title" class="card">
        <p>
          <a href="#/">← Wallets</a>
        </p>
        <h1 id="wallet-title">{w?.name ?? `Wallet ${id}`}</h1>
        {error && <Problem text={error} />}
        {w ? <WalletFacts w={w} /> : !error && <Loading what="the wallet" />}
        {w?.chainId === 31337 && <FundFromDevnet wallet={id} onFunded={reload} />}
      </section>
      {w && (
        <>
          <Chart wallet={id} />
          <Transactions wallet={id} explorer={w.explorer} />
          <Charges wallet={id} />
          <Payouts wallet={id} />
          <Webhooks wallet={id} />
          <Policy wallet={id} />
          <Reconciliation wallet={id} />
        </>
      )}
    </div>
  );
}
