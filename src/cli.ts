/**
 * The command line: user:create, network:add, network:deploy-sweeper, key:create, migrate, keys:rotate, reconcile, devnet:fund,
 * rate:set, rate:clear. Each prints one JSON object
 * for what it made (reconcile: one line per wallet, exit 1 when any is not ok); an error prints one JSON object with
 * `error` (and `fields` for bad input), exit 1.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { createContext, openStore } from './runtime.js';
import { AuthService } from './modules/auth/auth.service.js';
import { registerNetwork } from './modules/networks/networks.service.js';
import { findPreset, presetKeys } from './modules/networks/presets.js';
import { networkView } from './modules/networks/networks.views.js';
import { isAppError } from './errors.js';
import { formatDateTime } from './lib/time.js';
import { parseKeyInput } from './modules/keys/keys.schemas.js';
import { KeyService } from './modules/keys/keys.service.js';
import { createdKeyView } from './modules/keys/keys.views.js';
import type { AppContext } from './context.js';
import { rotateSecrets } from './modules/secrets/secrets.service.js';
import { reconcileWallets } from './modules/reconciliation/reconciliation.run.js';
import { fundWalletFromDevnet } from './modules/networks/devnet-fund.js';
import { deploySweeper } from './modules/networks/sweeper-deploy.js';
import { findWalletView } from './modules/wallets/wallets.repository.js';
import { parseAmount } from './lib/money.js';
import { RateService } from './modules/rates/rates.service.js';

const USAGE = `usage:
  cli user:create <email> <password> [--name NAME]
  cli network:add --name N --rpc-url U [--rpc-url U2 ...] --chain-id C --symbol S [--explorer URL] [--mainnet] [--confirmations K]
  cli network:add --preset P --rpc-url U [--rpc-url U2 ...] [--name N] [--chain-id C] [--confirmations K] ...   (flags override the preset)
  cli network:deploy-sweeper --network ID --wallet W   deploy the Sweeper (keyless deposit addresses) from wallet W's main address
  cli key:create <email> --name N --scopes read,charges:write [--expires-in SECONDS]
  cli migrate
  cli keys:rotate      re-encrypt every secret under the current APP_KEY
  cli reconcile [--wallet ID]   the chain against the records, one JSON line per wallet; exit 1 when any is not ok
  cli rate:set --token SYMBOL --currency USD|EUR|GBP --value V [--network ID]   a manual exchange rate (wins over feeds)
  cli rate:clear --token SYMBOL --currency USD|EUR|GBP [--network ID]
  cli devnet:fund <wallet> <amount>   send <amount> ETH to the wallet from the local devnet's dev account (the local devnet only)`;

function print(obj: unknown): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

type Command = (ctx: AppContext, args: string[]) => Promise<unknown>;

/** A command's output of several lines, and its exit code. */
class Lines {
  constructor(
    readonly lines: unknown[],
    readonly code: number,
  ) {}
}

const COMMANDS: Record<string, Command> = {
  'user:create': createUser,
  'network:add': addNetwork,
  'network:deploy-sweeper': deploySweeperCommand,
  'key:create': createKey,
  migrate: async (ctx) => ({ migrated: true, driver: ctx.store.driver }),
  'keys:rotate': (ctx) => rotateSecrets(ctx),
  reconcile,
  'devnet:fund': devnetFund,
  'rate:set': (ctx, args) => rateCommand(ctx, args, true),
  'rate:clear': (ctx, args) => rateCommand(ctx, args, false),
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Own keys only: `toString` or `constructor` is no command.
  const run = command !== undefined && Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!run) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = loadConfig();
  // The CLI logs only warnings to stderr; stdout carries the one JSON result.
  const log = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, process.stderr as never);
  const store = await openStore(config, log);
  try {
    const out = await run(createContext(config, store, log), rest);
    if (!(out instanceof Lines)) {
      print(out);
      return 0;
    }
    for (const line of out.lines) print(line);
    return out.code;
  } finally {
    await store.destroy();
  }
}

/** user:create <email> <password> [--name NAME] */
async function createUser(ctx: AppContext, args: string[]) {
  const { values, positionals } = parseArgs({ args, options: { name: { type: 'string' } }, allowPositionals: true });
  const [email, password] = positionals;
  if (!email || !password) throw new Error('user:create needs <email> <password>');
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw new Error('email is not a valid email address');
  if (password.length < 8) throw new Error('password must be at least 8 characters');
  const u = await new AuthService(ctx).createUser({ email, password, name: values.name });
  return { id: u.id, name: u.name, email: u.email, created_at: formatDateTime(u.created_at) };
}

/** How long network:add waits for the endpoints' first head read (their health is in its output). */
const CLI_HEALTH_WAIT_MS = 2_000;

/**
 * network:add --name N --rpc-url U [--rpc-url U2 ...] --chain-id C --symbol S [--explorer URL] [--mainnet] [--confirmations K];
 * with --preset P the preset gives whatever the flags do not (src/modules/networks/presets.ts).
 */
async function addNetwork(ctx: AppContext, args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      preset: { type: 'string' },
      name: { type: 'string' },
      'rpc-url': { type: 'string', multiple: true },
      'chain-id': { type: 'string' },
      symbol: { type: 'string' },
      explorer: { type: 'string' },
      mainnet: { type: 'boolean' },
      confirmations: { type: 'string' },
    },
  });
  if (values.preset !== undefined && !findPreset(values.preset)) {
    throw new Error(`unknown preset ${JSON.stringify(values.preset)}; the presets are: ${presetKeys().join(', ')}`);
  }
  const n = await registerNetwork(
    ctx.store.db,
    {
      preset: values.preset,
      name: values.name,
      ...(values['rpc-url'] !== undefined && values['rpc-url'].length > 1
        ? { rpc_urls: values['rpc-url'] }
        : { rpc_url: values['rpc-url']?.[0] }),
      chain_id: values['chain-id'],
      currency_symbol: values.symbol,
      block_explorer: values.explorer,
      is_mainnet: values.mainnet === true ? true : undefined,
      confirmations: values.confirmations,
    },
    ctx.clock.nowMs(),
  );
  const endpoints = await ctx.chains.checkedHealth(n, CLI_HEALTH_WAIT_MS);
  ctx.chains.close();
  return { ...networkView(n, endpoints), is_mainnet: n.is_mainnet === 1, confirmations: n.confirmations };
}

/** network:deploy-sweeper --network ID --wallet W (sweeper-deploy.ts): what was deployed and recorded. */
async function deploySweeperCommand(ctx: AppContext, args: string[]) {
  const { values } = parseArgs({ args, options: { network: { type: 'string' }, wallet: { type: 'string' } } });
  const id = /^[1-9][0-9]{0,14}$/;
  if (values.network === undefined || !id.test(values.network)) throw new Error('--network must be a network id');
  if (values.wallet === undefined || !id.test(values.wallet)) throw new Error('--wallet must be a wallet id');
  try {
    return await deploySweeper(ctx, Number(values.network), Number(values.wallet));
  } finally {
    ctx.chains.close();
  }
}

/** rate:set / rate:clear --token SYMBOL --currency C [--value V] [--network ID] (rates.service.ts): the rate as set, or what was cleared. */
async function rateCommand(ctx: AppContext, args: string[], set: boolean) {
  const { values } = parseArgs({
    args,
    options: { token: { type: 'string' }, currency: { type: 'string' }, value: { type: 'string' }, network: { type: 'string' } },
  });
  if (values.network !== undefined && !/^[1-9][0-9]{0,14}$/.test(values.network)) throw new Error('--network must be a network id');
  const input = {
    symbol: values.token ?? '',
    currency: values.currency ?? '',
    networkId: values.network === undefined ? undefined : Number(values.network),
  };
  const rates = new RateService(ctx);
  if (!set)
    return { network_id: input.networkId ?? null, token: input.symbol, currency: input.currency, cleared: await rates.clearManual(input) };
  const r = await rates.setManual({ ...input, value: values.value ?? '' });
  return { network_id: r.network_id === 0 ? null : r.network_id, token: r.symbol, currency: r.currency, value: r.value, source: 'manual' };
}

/** key:create: an API key for an existing user, printed once (only its hash is stored). */
async function createKey(ctx: AppContext, args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    options: { name: { type: 'string' }, scopes: { type: 'string' }, 'expires-in': { type: 'string' } },
    allowPositionals: true,
  });
  const [email] = positionals;
  if (!email) throw new Error('key:create needs <email>');
  const user = await new AuthService(ctx).findUserByEmail(email);
  if (!user) throw new Error(`no user with the email ${email}`);
  const expires = values['expires-in'];
  const input = parseKeyInput({
    name: values.name,
    scopes:
      values.scopes === undefined
        ? undefined
        : values.scopes
            .split(',')
            .map((x) => x.trim())
            .filter((x) => x !== ''),
    ...(expires === undefined ? {} : { expires_in: /^\d+$/.test(expires) ? Number(expires) : expires }),
  });
  const { row, key } = await new KeyService(ctx).create(user.id, input);
  return createdKeyView(row, key);
}

/** reconcile [--wallet ID]: one line per wallet (`error` for a wallet that could not be compared); exit 1 unless every one is ok. */
async function reconcile(ctx: AppContext, args: string[]) {
  const { values } = parseArgs({ args, options: { wallet: { type: 'string' } } });
  const id = values.wallet;
  if (id !== undefined && !/^[1-9][0-9]{0,14}$/.test(id)) throw new Error('--wallet must be a wallet id');
  const results = await reconcileWallets(ctx, id === undefined ? undefined : Number(id));
  return new Lines(
    results.map((r) => r.line),
    results.every((r) => r.ok) ? 0 : 1,
  );
}

/** devnet:fund <wallet> <amount>: ETH from the local devnet's first dev account, in a real transfer (devnet-fund.ts). */
async function devnetFund(ctx: AppContext, args: string[]) {
  const { positionals } = parseArgs({ args, allowPositionals: true });
  const [id, amount] = positionals;
  if (!id || !/^[1-9][0-9]{0,14}$/.test(id) || amount === undefined) throw new Error('devnet:fund needs <wallet id> <amount in ETH>');
  let wei: bigint;
  try {
    wei = parseAmount(amount, 18);
  } catch {
    throw new Error(`amount "${amount}" is not an ETH amount (at most 18 decimal places)`);
  }
  if (wei <= 0n) throw new Error('amount must be greater than 0');
  const wallet = await findWalletView(ctx.store.db, Number(id));
  if (!wallet) throw new Error(`no wallet ${id}`);
  return fundWalletFromDevnet(ctx.store.db, wallet, wei);
}

main(process.argv.slice(2))
  .then((code) => process.exit(code))
  .catch((e: unknown) => {
    if (e instanceof ConfigError) print({ error: e.message });
    else if (isAppError(e)) print({ error: e.message, fields: e.data });
    else print({ error: (e as Error).message });
    process.exit(1);
  });
