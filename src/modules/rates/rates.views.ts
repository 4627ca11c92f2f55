import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime } from '../../lib/time.js';
import { RATE_DECIMALS } from './currencies.js';
import type { Rate } from './rates.service.js';

export function rateView(networkId: number, r: Rate) {
  return {
    network_id: networkId,
    token: r.token,
    currency: r.currency,
    value: formatUnits18(r.value, RATE_DECIMALS),
    source: r.source,
    at: formatDateTime(r.atMs),
  };
}
