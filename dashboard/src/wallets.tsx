/**
 * The wallets: each with its network, address and balances (`New wallet`: a name and a network),
 * and one wallet's page with all its sections (send, tokens, chart, transactions, charges,
 * payouts, webhooks, policy, reconciliation) and, on the local devnet, `Fund from devnet`.
 */
import { useState } from 'preact/hooks';
import { api, failure, type Data } from './api.js';
import { ok, useApi } from './data.js';
import { amount as short } from './format.js';
import { addressProblem, amountProblem, Field, Opener, problems, useOpen, Submit, useForm, valueOf, type Placed } from './forms.js';
import { Amount, Empty, Hash, Loading, Notice, Problem, StatusBadge } from './ui.js';
import { Chart, Transactions } from './transactions.js';
import { Charges } from './charges.js';
import { DepositAddresses } from './deposit-addresses.js';
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
  balances: WalletToken[] | null;
  error: string | null;
}

/** An active token of the wallet with its balance. */
interface WalletToken {
  symbol: string;
  name: string;
  balance: string;
  decimals: number;
  contract: string;
  is_native: boolean;
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
    balances: balance.data
      ? balance.data.data.tokens.map((t) => ({
          symbol: t.symbol,
          name: t.name,
          balance: t.balance,
          decimals: t.decimals,
          contract: t.contract,
          is_native: t.is_native,
        }))
      : null,
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
      {wallets && <NewWallet first={wallets.length === 0} />}
      {!wallets ? (
        !error && <Loading what="wallets" />
      ) : wallets.length === 0 ? (
        <Empty text="No wallets yet." />
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

/** `New wallet`: a name and a network (of those the service has); the new wallet's page opens. */
function NewWallet({ first }: { first: boolean }) {
  const [name, setName] = useState('');
  const [network, setNetwork] = useState('');
  const form = useForm('new-wallet', { name: 'Wallet name', network_id: 'Network' });
  const [open, show] = useOpen(form, first);
  const { data: networks, error } = useApi(
    async () => (open ? ok(await api.GET('/api/networks'), 'The networks could not be listed.').data : []),
    [open],
  );
  const chosen = network || String(networks?.[0]?.id ?? '');
  const create = async (e: Event) => {
    e.preventDefault();
    const created = await form.submit(
      () => api.POST('/api/wallet/create', { body: { name: name.trim(), network_id: Number(chosen) } }),
      () => problems({ name: name.trim() === '' ? 'Wallet name is required.' : null, network_id: chosen ? null : 'Choose a network.' }),
    );
    if (created) window.location.hash = `#/wallet/${created.data.id}`;
  };
  if (!open) return <Opener text="New wallet" onOpen={show} />;
  return (
    <form class="inline-form card" ref={form.ref} onSubmit={(e) => void create(e)} aria-labelledby="new-wallet-title" noValidate>
      <h2 id="new-wallet-title">New wallet</h2>
      <Field form={form} name="name">
        {(p) => <input {...p} autocomplete="off" maxLength={255} value={name} onInput={(e) => setName(valueOf(e))} />}
      </Field>
      <Field form={form} name="network_id" hint="The chain its address lives on; it cannot be changed later.">
        {(p) =>
          error ? (
            <Problem text={error} />
          ) : (
            <select {...p} value={chosen} onChange={(e) => setNetwork(valueOf(e))}>
              {(networks ?? []).map((n) => (
                <option key={n.id} value={n.id}>
                  {n.name} (chain {n.chain_id}, {n.currency_symbol})
                </option>
              ))}
            </select>
          )
        }
      </Field>
      <Submit form={form} text="Create wallet" busyText="Creating the wallet…" />
    </form>
  );
}

/** The local devnet's "Fund from devnet" (anvil's dev account sends ETH in a real transfer). */
function FundFromDevnet({ wallet, onFunded }: { wallet: string; onFunded: () => void }) {
  const [value, setValue] = useState('1');
  const [message, setMessage] = useState<string | null>(null);
  const form = useForm('fund', { amount: 'ETH from the local devnet' });
  const fund = async (e: Event) => {
    e.preventDefault();
    setMessage(null);
    const r = await form.submit(
      () => api.POST('/api/wallet/{wallet}/devnet/fund', { params: { path: { wallet } }, body: { amount: value.trim() } }),
      () => problems({ amount: amountProblem(value, 'The amount') }),
    );
    if (!r) return;
    setMessage(`Funded with ${short(r.data.amount)} ETH from the devnet.`);
    onFunded();
  };
  return (
    <form class="inline-form" ref={form.ref} onSubmit={(e) => void fund(e)} aria-label="Fund from the local devnet" noValidate>
      <Field form={form} name="amount">
        {(p) => <input {...p} inputMode="decimal" autocomplete="off" value={value} onInput={(e) => setValue(valueOf(e))} />}
      </Field>
      <Submit form={form} text="Fund from devnet" busyText="Funding…" />
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
          <Send wallet={id} tokens={w.balances ?? []} explorer={w.explorer} />
          <Tokens wallet={id} tokens={w.balances} onAdded={reload} />
          <Chart wallet={id} />
          <Transactions wallet={id} explorer={w.explorer} />
          <Charges wallet={id} />
          <DepositAddresses wallet={id} explorer={w.explorer} />
          <Payouts wallet={id} />
          <Webhooks wallet={id} />
          <Policy wallet={id} />
          <Reconciliation wallet={id} />
        </>
      )}
    </div>
  );
}

/** The refusals of a transfer that belong to its amount or its recipient, in a merchant's words. */
const SEND_REFUSALS: Placed = {
  'Insufficient balance for transaction': ['amount', 'Amount is more than the wallet holds, with the network fee.'],
  'Policy: over the per-transaction limit': ['amount', "Amount is over the wallet's per-transaction limit."],
  'Policy: over the daily limit': ['amount', 'Amount would take the wallet over its daily limit.'],
  'Policy: address not on the allowlist': ['address', "Recipient address is not on the wallet's allowlist."],
  'Address is blocked by screening': ['address', 'Recipient address is blocked by screening.'],
};

/** `Send`: a token of the wallet, an amount and a recipient; the transfer is followed until it settles. */
function Send({ wallet, tokens, explorer }: { wallet: string; tokens: WalletToken[]; explorer: string }) {
  const [token, setToken] = useState('');
  const [amount, setAmount] = useState('');
  const [address, setAddress] = useState('');
  const [sent, setSent] = useState<{ id: number } | null>(null);
  const form = useForm('send', { token: 'Token', amount: 'Amount', address: 'Recipient address' }, {}, SEND_REFUSALS);
  const chosen = tokens.find((t) => t.symbol === token) ?? tokens[0];
  const send = async (e: Event) => {
    e.preventDefault();
    const created = await form.submit(
      () =>
        api.POST('/api/wallet/{wallet}/transaction/create', {
          params: { path: { wallet } },
          body: { token: chosen?.symbol, amount: amount.trim(), address: address.trim() },
        }),
      () =>
        problems({
          token: chosen ? null : 'The wallet has no token to send.',
          amount: amountProblem(amount, 'Amount'),
          address: addressProblem(address, 'Recipient address'),
        }),
    );
    if (!created) return;
    setSent({ id: created.data.id });
    setAmount('');
    setAddress('');
  };
  return (
    <section aria-labelledby="send-title">
      <h2 id="send-title">Send</h2>
      <form class="inline-form" ref={form.ref} onSubmit={(e) => void send(e)} aria-labelledby="send-title" noValidate>
        <Field form={form} name="token">
          {(p) => (
            <select {...p} value={chosen?.symbol ?? ''} onChange={(e) => setToken(valueOf(e))}>
              {tokens.map((t) => (
                <option key={t.symbol} value={t.symbol}>
                  {t.symbol} (balance {short(t.balance)})
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field form={form} name="amount" hint={chosen ? `In ${chosen.symbol}, at most ${chosen.decimals} decimal places.` : undefined}>
          {(p) => <input {...p} inputMode="decimal" autocomplete="off" value={amount} onInput={(e) => setAmount(valueOf(e))} />}
        </Field>
        <Field form={form} name="address" hint="0x followed by 40 hexadecimal characters.">
          {(p) => (
            <input {...p} class="mono" autocomplete="off" spellcheck={false} value={address} onInput={(e) => setAddress(valueOf(e))} />
          )}
        </Field>
        <Submit form={form} text="Send" busyText="Sending…" />
      </form>
      {sent && <Transfer key={sent.id} wallet={wallet} id={sent.id} explorer={explorer} />}
    </section>
  );
}

/** The transfer just sent: read again on its wallet's transaction events, and while it is pending. */
function Transfer({ wallet, id, explorer }: { wallet: string; id: number; explorer: string }) {
  const { data: tx, error } = useApi(
    async () =>
      ok(
        await api.GET('/api/wallet/{wallet}/transaction/show/{transaction}', { params: { path: { wallet, transaction: String(id) } } }),
        'The transfer could not be read.',
      ).data,
    [wallet, id],
    { refreshOn: ['transaction.'], wallet, again: (t) => t.status === 'pending' },
  );
  if (error && !tx) return <Problem text={error} />;
  if (!tx) return <Loading what="the transfer" />;
  return (
    <div class="sent" role="status" data-transfer={tx.id}>
      <p>
        Transfer {tx.id}: <Amount value={tx.amount} symbol={tx.symbol} /> <StatusBadge status={tx.status} />
        {tx.tx_hash ? (
          <>
            {' '}
            · <Hash hash={tx.tx_hash} explorer={explorer} />
          </>
        ) : null}
      </p>
      <dl class="balances">
        <div>
          <dt>From</dt>
          <dd class="mono" data-from={tx.from}>
            {tx.from}
          </dd>
        </div>
        <div>
          <dt>To</dt>
          <dd class="mono" data-to={tx.to}>
            {tx.to}
          </dd>
        </div>
      </dl>
    </div>
  );
}

/** The wallet's tokens, and `Add token`: an ERC-20 contract address (its symbol and decimals are read from the chain). */
function Tokens({ wallet, tokens, onAdded }: { wallet: string; tokens: WalletToken[] | null; onAdded: () => void }) {
  const [contract, setContract] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  const form = useForm('add-token', { contract: 'Token contract address' });
  const add = async (e: Event) => {
    e.preventDefault();
    setMessage(null);
    const added = await form.submit(
      () => api.POST('/api/wallet/{wallet}/token/add', { params: { path: { wallet } }, body: { contract: contract.trim() } }),
      () => problems({ contract: addressProblem(contract, 'Token contract address') }),
    );
    if (!added) return;
    setMessage(`${added.data.symbol} (${added.data.name}, ${added.data.decimals} decimals) added.`);
    setContract('');
    onAdded();
  };
  return (
    <section aria-labelledby="tokens-title">
      <h2 id="tokens-title">Tokens</h2>
      {tokens && (
        <ul class="plain">
          {tokens.map((t) => (
            <li key={t.symbol} data-token={t.symbol}>
              <strong>{t.symbol}</strong>
              {t.name !== t.symbol ? ` ${t.name}` : ''} · {t.decimals} decimals ·{' '}
              {t.is_native ? 'native coin' : <span class="mono">{t.contract}</span>}
            </li>
          ))}
        </ul>
      )}
      <form class="inline-form" ref={form.ref} onSubmit={(e) => void add(e)} aria-label="Add token" noValidate>
        <Field form={form} name="contract" hint="The ERC-20 contract on this wallet's network: its symbol and decimals are read from it.">
          {(p) => (
            <input {...p} class="mono" autocomplete="off" spellcheck={false} value={contract} onInput={(e) => setContract(valueOf(e))} />
          )}
        </Field>
        <Submit form={form} text="Add token" busyText="Adding the token…" />
        <Notice message={message} />
      </form>
    </section>
  );
}
