/**
 * GET /wallet/{wallet}/export/transactions.csv   the transaction list as CSV, oldest first
 * GET /wallet/{wallet}/export/charges.csv        the charges
 * GET /wallet/{wallet}/export/payouts.csv        the payouts, one record per item
 * (scope `read`; `from`, `to` on `created_at`; docs/exports.md)
 */
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { csvResponses } from '../../http/envelope.js';
import { requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import { ExportQuery, parseCreatedRange, type CreatedRange } from './exports.schemas.js';
import type { ExportService } from './exports.service.js';

type Export = 'transactions' | 'charges' | 'payouts';

const DOCS: Record<Export, { summary: string; description: string; example: string }> = {
  transactions: {
    summary: 'The transactions of the wallet as a CSV file, oldest first',
    description:
      'Every transaction the list shows, oldest first, as RFC 4180 CSV with a header row: `id, created_at, type, status, token, amount, fee, from, to, tx_hash, block_number, reference`. `fee` is the native fee the wallet paid (L1 data fee included; 0 for a receipt, empty until mined). `from` and `to` filter on `created_at` (422 on a bad one). Sent as it is read, in constant memory.',
    example:
      'id,created_at,type,status,token,amount,fee,from,to,tx_hash,block_number,reference\r\n1,2026-01-15 12:00:00,receipt,confirmed,ETH,1.500000000000000000,0.000000000000000000,0x8ba1f109551bD432803012645Ac136ddd64DBA72,0x71C7656EC7ab88b098defB751B7401B5f6d8976F,0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060,120,\r\n',
  },
  charges: {
    summary: 'The charges of the wallet as a CSV file, oldest first',
    description:
      'Every charge the list shows, oldest first, as RFC 4180 CSV with a header row: `id, uuid, created_at, status, token, amount, paid_amount, price_amount, price_currency, content, info` (`content` and `info` as JSON text; `price_amount` and `price_currency` empty: charges have no price yet). `from` and `to` filter on `created_at` (422 on a bad one).',
    example:
      'id,uuid,created_at,status,token,amount,paid_amount,price_amount,price_currency,content,info\r\n1,6f1c2c1e-0f5e-4c43-9d38-2f5e3c1b9a10,2026-01-15 12:00:00,paid,ETH,0.250000000000000000,0.250000000000000000,,,"{""order"":""42""}",\r\n',
  },
  payouts: {
    summary: 'The payouts of the wallet as a CSV file, one record per item',
    description:
      'Every item of every payout, payouts oldest first and each one’s items in order, as RFC 4180 CSV with a header row: `payout_id, item_id, reference, address, token, amount, status, tx_hash, failure_reason, created_at` (the item’s status and failure reason as the payout shows them; `created_at` the payout’s). `from` and `to` filter on the payout’s `created_at` (422 on a bad one).',
    example:
      'payout_id,item_id,reference,address,token,amount,status,tx_hash,failure_reason,created_at\r\n1,1,inv-1,0x8ba1f109551bD432803012645Ac136ddd64DBA72,ETH,1.500000000000000000,confirmed,0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060,,2026-01-15 12:00:00\r\n',
  },
};

/**
 * The file as a stream: each chunk is read from the generator when the client has taken the
 * last. A HEAD gets the same headers and no records: Fastify drains a HEAD's stream to discard
 * it, which would read every page of the export for nothing.
 */
function sendCsv(reply: FastifyReply, filename: string, records: () => AsyncGenerator<Buffer>): FastifyReply {
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${filename}"`)
    .send(Readable.from(reply.request.method === 'HEAD' ? [] : records(), { objectMode: false }));
}

export async function exportRoutes(app: App, service: ExportService): Promise<void> {
  const records: Record<Export, (walletId: number, range: CreatedRange) => AsyncGenerator<Buffer>> = {
    transactions: (w, r) => service.transactions(w, r),
    charges: (w, r) => service.charges(w, r),
    payouts: (w, r) => service.payouts(w, r),
  };
  for (const kind of ['transactions', 'charges', 'payouts'] as const) {
    const { summary, description, example } = DOCS[kind];
    app.get(
      `/wallet/:wallet/export/${kind}.csv`,
      {
        schema: {
          tags: [kind],
          summary,
          description,
          params: WalletParams,
          querystring: ExportQuery,
          response: csvResponses(
            `RFC 4180 CSV (CRLF line ends), a header row then one record per ${kind === 'payouts' ? 'item' : 'row'}`,
            example,
          ),
        },
      },
      async (req, reply) => {
        const wallet = requireWallet(req);
        const range = parseCreatedRange(req.query);
        return sendCsv(reply, `wallet-${wallet.id}-${kind}.csv`, () => records[kind](wallet.id, range));
      },
    );
  }
}
