/**
 * The command line: user:create, network:add, migrate. Each prints one JSON object for what it
 * made; an error prints one JSON object with `error` (and `fields` for bad input), exit 1.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { createContext, openStore } from './runtime.js';
import { AuthService } from './modules/auth/auth.service.js';
import { registerNetwork, networkView } from './modules/networks/networks.service.js';
import { isAppError } from './errors.js';
import { formatDateTime } from './lib/time.js';

const USAGE = `usage:
  cli user:create <email> <password> [--name NAME]
  cli network:add --name N --rpc-url U --chain-id C --symbol S [--explorer URL] [--mainnet] [--confirmations K]
  cli migrate`;

function print(obj: unknown): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || !['user:create', 'network:add', 'migrate'].includes(command)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = loadConfig();
  // The CLI logs only warnings to stderr; stdout carries the one JSON result.
  const log = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, process.stderr as never);
  const store = await openStore(config, log);
  try {
    if (command === 'migrate') {
      print({ migrated: true, driver: store.driver });
      return 0;
    }
    const ctx = createContext(config, store, log);
    if (command === 'user:create') {
      const { values, positionals } = parseArgs({ args: rest, options: { name: { type: 'string' } }, allowPositionals: true });
      const [email, password] = positionals;
      if (!email || !password) throw new Error('user:create needs <email> <password>');
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw new Error('email is not a valid email address');
      if (password.length < 8) throw new Error('password must be at least 8 characters');
      const u = await new AuthService(ctx).createUser({ email, password, name: values.name });
      print({ id: u.id, name: u.name, email: u.email, created_at: formatDateTime(u.created_at) });
      return 0;
    }
    const { values } = parseArgs({
      args: rest,
      options: {
        name: { type: 'string' },
        'rpc-url': { type: 'string' },
        'chain-id': { type: 'string' },
        symbol: { type: 'string' },
        explorer: { type: 'string' },
        mainnet: { type: 'boolean' },
        confirmations: { type: 'string' },
      },
    });
    const n = await registerNetwork(
      store.db,
      {
        name: values.name,
        rpc_url: values['rpc-url'],
        chain_id: values['chain-id'],
        currency_symbol: values.symbol,
        block_explorer: values.explorer ?? '',
        is_mainnet: values.mainnet === true,
        confirmations: values.confirmations,
      },
      ctx.clock.nowMs(),
    );
    print({ ...networkView(n), is_mainnet: n.is_mainnet === 1, confirmations: n.confirmations });
    return 0;
  } finally {
    await store.destroy();
  }
}

main(process.argv.slice(2))
  .then((code) => process.exit(code))
  .catch((e: unknown) => {
    if (e instanceof ConfigError) print({ error: e.message });
    else if (isAppError(e)) print({ error: e.message, fields: e.data });
    else print({ error: (e as Error).message });
    process.exit(1);
  });
