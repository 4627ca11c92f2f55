/** The CLI: user:create, network:add, migrate; one JSON object each; errors exit 1. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { runCli } from '../helpers/process.js';
import { TEST_APP_KEY, startTestApp } from '../helpers/app.js';

describe('cli', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    db = await createTestDatabase();
    env = { NODE_ENV: 'test', DATA_DIR: db.dataDir, APP_KEY: TEST_APP_KEY, ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}) };
  });
  afterAll(async () => db?.drop());

  it('migrates, creates a user who can log in, and adds a network', async () => {
    const m = await runCli(['migrate'], env);
    expect(m.code).toBe(0);
    expect(m.json).toEqual({ migrated: true, driver: db.databaseUrl ? 'postgres' : 'sqlite' });

    const u = await runCli(['user:create', 'cli@example.com', 'cli-password-1', '--name', 'CLI User'], env);
    expect(u.code).toBe(0);
    expect(u.json).toEqual({
      id: 1,
      name: 'CLI User',
      email: 'cli@example.com',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
    });

    const n = await runCli(
      [
        'network:add',
        '--name',
        'Sepolia',
        '--rpc-url',
        'https://rpc.example.org',
        '--chain-id',
        '11155111',
        '--symbol',
        'ETH',
        '--explorer',
        'https://sepolia.etherscan.io',
        '--confirmations',
        '3',
      ],
      env,
    );
    expect(n.code).toBe(0);
    // Why: no DNS, refused or timed out, as the machine's network has it; null when the head read has not answered yet.
    const unreachableReason = expect.toBeOneOf([
      null,
      'host not found',
      'connection refused',
      'connection reset',
      'host unreachable',
      'connection failed',
      'timed out',
      'request failed',
    ]);
    expect(n.json).toEqual({
      id: 1,
      name: 'Sepolia',
      rpc_url: 'https://rpc.example.org',
      // No JSON-RPC node answers there: its health says so.
      rpc_endpoints: [
        {
          url: 'https://rpc.example.org',
          ok: false,
          head_block: null,
          lag_blocks: null,
          latency_ms: null,
          error: unreachableReason,
          traces: true,
        },
      ],
      chain_id: 11155111,
      currency_symbol: 'ETH',
      block_explorer: 'https://sepolia.etherscan.io',
      preset: null,
      sweeper: null,
      is_mainnet: false,
      confirmations: 3,
    });

    // The service started on the same data sees both.
    const t = await startTestApp({ database: db, keepDatabase: true });
    try {
      const login = await t.request('POST', '/api/auth/login', { body: { email: 'cli@example.com', password: 'cli-password-1' } });
      expect(login.status).toBe(200);
      const nets = await t.request('GET', '/api/networks', { token: login.body.data.token });
      expect(nets.body.data).toEqual([
        {
          id: 1,
          name: 'Sepolia',
          rpc_url: 'https://rpc.example.org',
          rpc_endpoints: [
            {
              url: 'https://rpc.example.org',
              ok: false,
              head_block: null,
              lag_blocks: null,
              latency_ms: null,
              error: unreachableReason,
              traces: true,
            },
          ],
          chain_id: 11155111,
          currency_symbol: 'ETH',
          block_explorer: 'https://sepolia.etherscan.io',
          preset: null,
          sweeper: null,
        },
      ]);
    } finally {
      await t.close();
    }
  });

  it('refuses bad input with one JSON error and exit code 1', async () => {
    const dup = await runCli(['user:create', 'cli@example.com', 'another-password'], env);
    expect(dup.code).toBe(1);
    expect(dup.json.error).toBe('The email has already been taken');
    const short = await runCli(['user:create', 'x@example.com', 'short'], env);
    expect(short.code).toBe(1);
    expect(short.json.error).toMatch(/at least 8/);
    const net = await runCli(['network:add', '--name', 'Bad', '--rpc-url', 'not a url', '--chain-id', 'abc', '--symbol', 'ETH'], env);
    expect(net.code).toBe(1);
    expect(net.json.fields).toEqual({
      rpc_url: ['The rpc_url field must be a valid URL.'],
      chain_id: ['The chain_id field must be a positive integer.'],
    });
  });

  it('answers a command named after an object property (toString, constructor) with its usage and exit code 2', async () => {
    for (const name of ['toString', 'constructor']) {
      const r = await runCli([name], env);
      expect(r.code, r.stdout).toBe(2);
      expect(r.stdout).toMatch(/^usage:\n {2}cli user:create/);
    }
  });

  it('stops on a bad configuration value with a one-line message naming the variable', async () => {
    const r = await runCli(['migrate'], { ...env, PORT: 'eighty' });
    expect(r.code).toBe(1);
    expect(r.json).toEqual({ error: 'Invalid configuration: PORT must be a whole number, got "eighty"' });
  });
});
