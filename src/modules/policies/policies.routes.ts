/**
 * GET  /wallet/{wallet}/policy                        the spending policy (read)
 * POST /wallet/{wallet}/policy                        change it (login token only)
 * GET  /wallet/{wallet}/allowlist                     the allowlist (read)
 * POST /wallet/{wallet}/allowlist/add                 add an address (login token only)
 * POST /wallet/{wallet}/allowlist/{entry}/remove      remove one (login token only)
 *
 * Changes need a login token (`scope: 'login'`): a leaked API key cannot loosen what guards
 * the money. The decision on each transfer is in policies.check.ts.
 */
import { Type } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import { parseId, requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import {
  AllowlistAddBody,
  AllowlistEntryParams,
  AllowlistEntryRef,
  parseAllowlistAddress,
  parsePolicyInput,
  PolicyBody,
  PolicyRef,
} from './policies.schemas.js';
import type { PolicyService } from './policies.service.js';
import { allowlistEntryView, policyView } from './policies.views.js';

export async function policyRoutes(app: App, policies: PolicyService): Promise<void> {
  policyReadRoutes(app, policies);
  policyChangeRoute(app, policies);
  allowlistChangeRoutes(app, policies);
}

function policyReadRoutes(app: App, policies: PolicyService): void {
  app.get(
    '/wallet/:wallet/policy',
    {
      config: { scope: 'read' },
      schema: {
        tags: ['policies'],
        summary: "The wallet's spending policy",
        description:
          'Per token symbol: `per_transaction` (the most one transfer may send), `daily` (the most sent in any 24 hours, pending, awaiting-approval and confirmed transfers counted) and `approval_above` (a transfer over it waits as `awaiting_approval` until a login token approves or rejects it); `allowlist_only`. Empty objects and `false` by default.',
        params: WalletParams,
        response: responses(PolicyRef),
      },
    },
    async (req) => ok(policyView(await policies.get(requireWallet(req))), 'Policy retrieved'),
  );

  app.get(
    '/wallet/:wallet/allowlist',
    {
      config: { scope: 'read' },
      schema: {
        tags: ['policies'],
        summary: "The wallet's allowlist, oldest first",
        description: "The addresses transfers may go to while the policy's `allowlist_only` is set.",
        params: WalletParams,
        response: responses(Type.Array(AllowlistEntryRef)),
      },
    },
    async (req) => ok((await policies.allowlist(requireWallet(req))).map(allowlistEntryView), 'Allowlist retrieved'),
  );
}

function policyChangeRoute(app: App, policies: PolicyService): void {
  app.post(
    '/wallet/:wallet/policy',
    {
      config: { scope: 'login' },
      schema: {
        tags: ['policies'],
        summary: "Change the wallet's spending policy (login token only)",
        description:
          'Any of `per_transaction`, `daily`, `approval_above` (token symbol → amount, or `null` to remove that limit; symbols not named keep theirs) and `allowlist_only`. An unknown symbol of the wallet, or an amount not valid for the token, is 422. Needs a login token: an API key gets 403.',
        params: WalletParams,
        body: PolicyBody,
        response: responses(PolicyRef, [403]),
      },
    },
    async (req) => {
      const wallet = requireWallet(req);
      const input = parsePolicyInput(req.body as Record<string, unknown>, await policies.activeTokens(wallet));
      return ok(policyView(await policies.update(wallet, input)), 'Policy updated');
    },
  );
}

function allowlistChangeRoutes(app: App, policies: PolicyService): void {
  app.post(
    '/wallet/:wallet/allowlist/add',
    {
      config: { scope: 'login' },
      schema: {
        tags: ['policies'],
        summary: 'Add an address to the allowlist (login token only)',
        description:
          "A valid, non-zero address not yet on the wallet's list (else 422), with an optional label. Needs a login token: an API key gets 403.",
        params: WalletParams,
        body: AllowlistAddBody,
        response: responses(AllowlistEntryRef, [403]),
      },
    },
    async (req) => {
      const body = req.body as Record<string, unknown>;
      const address = parseAllowlistAddress(body);
      const entry = await policies.add(requireWallet(req), address, typeof body.label === 'string' ? body.label : '');
      return ok(allowlistEntryView(entry), 'Allowlist entry added');
    },
  );

  app.post(
    '/wallet/:wallet/allowlist/:entry/remove',
    {
      config: { scope: 'login' },
      schema: {
        tags: ['policies'],
        summary: 'Remove an address from the allowlist (login token only)',
        description:
          "Another wallet's entry, or an unknown one, is 404 `Allowlist entry not found`. Needs a login token: an API key gets 403.",
        params: AllowlistEntryParams,
        response: responses(AllowlistEntryRef, [403]),
      },
    },
    async (req) => {
      const entry = await policies.remove(requireWallet(req), parseId(req.params.entry));
      return ok(allowlistEntryView(entry), 'Allowlist entry removed');
    },
  );
}
