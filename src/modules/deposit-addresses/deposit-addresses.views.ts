/** The DepositAddress as the API shows it. */
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime } from '../../lib/time.js';
import type { DepositAddressRow, ReceivedTotal } from './deposit-addresses.repository.js';
import type { SweepRow } from '../charges/charges.sweeps.repository.js';
import { sweepView } from '../charges/charges.views.js';

export function depositAddressView(d: DepositAddressRow) {
  return {
    id: d.id,
    reference: d.reference,
    label: d.label,
    address: d.address,
    deposit_kind: d.deposit_kind,
    created_at: formatDateTime(d.created_at),
  };
}

export function depositAddressDetailView(d: DepositAddressRow, received: ReceivedTotal[], sweeps: SweepRow[]) {
  return {
    ...depositAddressView(d),
    received: received.map((r) => ({ token: r.symbol, amount: formatUnits18(r.amount, r.decimals) })),
    sweeps: sweeps.map(sweepView),
  };
}
