/**
 * A wallet's permanent deposit addresses: each with its reference and label, its address in full
 * (checksummed, linked to the network's explorer when it has one), what it has received (its
 * confirmed receipts, per token) and how many sweeps moved its money to the main address; and
 * `New deposit address` (a reference of the merchant's, unique in the wallet, and a label).
 */
import { useState } from 'preact/hooks';
import { getAddress } from 'viem';
import { api } from './api.js';
import { ok, PAGE, useApi } from './data.js';
import { shortHash } from './format.js';
import { Field, Opener, problems, Submit, useForm, useOpen, valueOf } from './forms.js';
import { Amount, Listing, Notice, Time, WholeAddress } from './ui.js';

/** The list answers no totals: each address is read for its `received` and `sweeps`. */
async function loadAddresses(wallet: string) {
  const list = ok(
    await api.GET('/api/wallet/{wallet}/deposit-address', { params: { path: { wallet }, query: { limit: PAGE } } }),
    'The deposit addresses could not be listed.',
  ).data;
  return Promise.all(
    list.map(
      async (d) =>
        ok(
          await api.GET('/api/wallet/{wallet}/deposit-address/{deposit_address}', {
            params: { path: { wallet, deposit_address: String(d.id) } },
          }),
          'A deposit address could not be read.',
        ).data,
    ),
  );
}

export function DepositAddresses({ wallet, explorer }: { wallet: string; explorer: string }) {
  // A receipt of an address is a transaction event of the wallet; a sweep is one too.
  const { data: rows, error, reload } = useApi(() => loadAddresses(wallet), [wallet], { refreshOn: ['transaction.'], wallet });
  return (
    <section aria-labelledby="deposit-addresses-title">
      <h2 id="deposit-addresses-title">Deposit addresses</h2>
      <NewDepositAddress wallet={wallet} onCreated={reload} />
      <Listing label="Deposit addresses" rows={rows} error={error} empty="No deposit address yet.">
        <table>
          <thead>
            <tr>
              <th scope="col">Reference</th>
              <th scope="col">Label</th>
              <th scope="col">Address</th>
              <th scope="col">Received</th>
              <th scope="col">Sweeps</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows?.map((d) => (
              <tr key={d.id} data-deposit-address={d.id}>
                <td data-label="Reference">{d.reference}</td>
                <td data-label="Label">{d.label ?? <span class="muted">none</span>}</td>
                <td data-label="Address">
                  <WholeAddress address={getAddress(d.address)} explorer={explorer} />
                </td>
                <td class="num" data-label="Received" data-received>
                  {d.received.length === 0 ? (
                    <span class="muted">nothing yet</span>
                  ) : (
                    d.received.map((r, i) => (
                      <span key={r.token}>
                        {i > 0 ? ', ' : ''}
                        <Amount value={r.amount} symbol={r.token} />
                      </span>
                    ))
                  )}
                </td>
                <td data-label="Sweeps">{d.sweeps.length}</td>
                <td data-label="Created">
                  <Time utc={d.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Listing>
    </section>
  );
}

/** `New deposit address`: a reference (a customer's account, an invoice series) and an optional label. */
function NewDepositAddress({ wallet, onCreated }: { wallet: string; onCreated: () => void }) {
  const [v, setV] = useState({ reference: '', label: '' });
  const [message, setMessage] = useState<string | null>(null);
  const form = useForm('new-deposit-address', { reference: 'Reference', label: 'Label (optional)' });
  const [open, show, hide] = useOpen(form);
  const create = async (e: Event) => {
    e.preventDefault();
    const reference = v.reference.trim();
    const label = v.label.trim();
    const created = await form.submit(
      () =>
        api.POST('/api/wallet/{wallet}/deposit-address/create', {
          params: { path: { wallet } },
          body: { reference, ...(label ? { label } : {}) },
        }),
      () => problems({ reference: reference ? null : 'Reference is required.' }),
    );
    if (!created) return;
    setMessage(`Deposit address ${shortHash(getAddress(created.data.address))} created for ${created.data.reference}.`);
    setV({ reference: '', label: '' });
    hide();
    onCreated();
  };
  if (!open)
    return (
      <Opener text="New deposit address" onOpen={show}>
        <Notice message={message} />
      </Opener>
    );
  return (
    <form class="inline-form" ref={form.ref} onSubmit={(e) => void create(e)} aria-labelledby="new-deposit-address-title" noValidate>
      <h3 id="new-deposit-address-title">New deposit address</h3>
      <Field form={form} name="reference" hint="Yours, unique in this wallet: a customer's account, a user id, an invoice series.">
        {(p) => <input {...p} autocomplete="off" value={v.reference} onInput={(e) => setV({ ...v, reference: valueOf(e) })} />}
      </Field>
      <Field form={form} name="label">
        {(p) => <input {...p} autocomplete="off" value={v.label} onInput={(e) => setV({ ...v, label: valueOf(e) })} />}
      </Field>
      <Submit form={form} text="Create deposit address" busyText="Creating the address…" />
    </form>
  );
}
