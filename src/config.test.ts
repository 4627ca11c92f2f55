import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

const KEY = Buffer.alloc(32, 7).toString('base64');

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c.host).toBe('127.0.0.1');
    expect(c.port).toBe(8080);
    expect(c.databaseUrl).toBeNull();
    expect(c.devnet).toEqual({
      spawn: true,
      register: true,
      port: 8545,
      rpcUrl: 'http://127.0.0.1:8545',
      rpcUrls: ['http://127.0.0.1:8545'],
    });
    expect(c.tokenTtlS).toBe(86400);
    expect(c.rateLimitPerMinute).toBe(60);
    expect(c.dashboardRateLimitPerMinute).toBe(600);
    expect(c.loginAttemptsPerMinute).toBe(5);
    expect(c.balanceMaxAgeS).toBe(5);
    expect(c.webhook.retryDelaysS).toEqual([60, 300, 900]);
    expect(c.webhook.allowPrivate).toBe(true);
    expect(c.webhook.connectTimeoutMs).toBe(10_000);
    expect(c.webhook.readTimeoutMs).toBe(20_000);
    expect(c.webhook.totalTimeoutMs).toBe(30_000);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.webhook)).toBe(true);
  });

  it('allows private webhook targets by default only for development on a loopback address', () => {
    expect(loadConfig({ HOST: 'localhost' }).webhook.allowPrivate).toBe(true);
    expect(loadConfig({ HOST: '::1' }).webhook.allowPrivate).toBe(true);
    expect(loadConfig({ NODE_ENV: 'development', HOST: '0.0.0.0' }).webhook.allowPrivate).toBe(false);
    expect(loadConfig({ NODE_ENV: 'development', HOST: '192.168.1.10' }).webhook.allowPrivate).toBe(false);
    expect(loadConfig({ NODE_ENV: 'test' }).webhook.allowPrivate).toBe(false);
    expect(loadConfig({ NODE_ENV: 'development', HOST: '0.0.0.0', WEBHOOK_ALLOW_PRIVATE: 'true' }).webhook.allowPrivate).toBe(true);
  });

  // Issue 47 (a): the development defaults are for one machine; on a public bind NODE_ENV must be said.
  it('refuses an unset NODE_ENV on a HOST others can reach, naming the variable', () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.10', '[2001:db8::1]', 'wallet.example.com']) {
      expect(() => loadConfig({ HOST: host }), host).toThrow(ConfigError);
      expect(() => loadConfig({ HOST: host }), host).toThrow(
        `Invalid configuration: NODE_ENV must be set when HOST (${host}) is not a loopback address`,
      );
      expect(() => loadConfig({ HOST: host, NODE_ENV: '' }), host).toThrow(/NODE_ENV must be set/);
    }
    // Said explicitly, each is accepted: production (with its key), or development on purpose.
    expect(loadConfig({ HOST: '0.0.0.0', NODE_ENV: 'production', APP_KEY: KEY }).devnet.register).toBe(false);
    expect(loadConfig({ HOST: '0.0.0.0', NODE_ENV: 'development' }).devnet.register).toBe(true);
    expect(loadConfig({ HOST: '0.0.0.0', NODE_ENV: 'test' }).nodeEnv).toBe('test');
    // Out of the box (`npm start` on a fresh machine) it listens on loopback with the development defaults.
    for (const host of [undefined, '127.0.0.1', '127.0.0.2', 'localhost', '::1', '[::1]']) {
      const c = loadConfig(host === undefined ? {} : { HOST: host });
      expect(c.nodeEnv, String(host)).toBe('development');
      expect(c.devnet.spawn).toBe(true);
    }
  });

  it('reads TRUST_PROXY as true/false, a hop count, or addresses and CIDRs', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: '0' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1,fd00::/8' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
      '::1',
      'fd00::/8',
    ]);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow(
      'Invalid configuration: TRUST_PROXY must be true, false, a hop count, or comma-separated addresses/CIDRs, got "10.0.0.0/33"',
    );
    expect(() => loadConfig({ TRUST_PROXY: 'proxy.local' })).toThrow(ConfigError);
  });

  it('uses an existing node instead of spawning one when DEVNET_RPC_URL is set', () => {
    const c = loadConfig({ DEVNET_RPC_URL: 'http://10.0.0.5:8545' });
    expect(c.devnet).toMatchObject({ spawn: false, register: true, rpcUrl: 'http://10.0.0.5:8545' });
  });

  it('production: requires APP_KEY, and private webhook targets are off by default', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow('Invalid configuration: APP_KEY is required');
    const c = loadConfig({ NODE_ENV: 'production', APP_KEY: KEY });
    expect(c.webhook.allowPrivate).toBe(false);
    expect(c.devnet.spawn).toBe(false);
  });

  it('serves /metrics without a token by default everywhere but in production (METRICS_PUBLIC)', () => {
    expect(loadConfig({}).metricsPublic).toBe(true);
    expect(loadConfig({ NODE_ENV: 'test' }).metricsPublic).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', APP_KEY: KEY }).metricsPublic).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', APP_KEY: KEY, METRICS_PUBLIC: 'true' }).metricsPublic).toBe(true);
    expect(loadConfig({ METRICS_PUBLIC: 'off' }).metricsPublic).toBe(false);
    expect(() => loadConfig({ METRICS_PUBLIC: 'maybe' })).toThrow(
      'Invalid configuration: METRICS_PUBLIC must be true or false, got "maybe"',
    );
  });

  it.each([
    [{ PORT: 'abc' }, 'Invalid configuration: PORT must be a whole number, got "abc"'],
    [{ PORT: '70000' }, 'Invalid configuration: PORT must be between 0 and 65535, got 70000'],
    [{ APP_KEY: 'short' }, 'Invalid configuration: APP_KEY must be 32 bytes encoded as base64 (e.g. `openssl rand -base64 32`)'],
    [{ DATABASE_URL: 'mysql://x' }, 'Invalid configuration: DATABASE_URL must use postgres: or postgresql:'],
    [
      { WEBHOOK_RETRY_DELAYS: '1,x' },
      'Invalid configuration: WEBHOOK_RETRY_DELAYS must be a comma-separated list of seconds (e.g. 60,300,900), got "1,x"',
    ],
    [{ WEBHOOK_ALLOW_PRIVATE: 'maybe' }, 'Invalid configuration: WEBHOOK_ALLOW_PRIVATE must be true or false, got "maybe"'],
    [{ NODE_ENV: 'staging' }, 'Invalid configuration: NODE_ENV must be development, production or test, got "staging"'],
    [{ BOOTSTRAP_EMAIL: 'a@b.c' }, 'Invalid configuration: BOOTSTRAP_PASSWORD must be set together with its pair'],
  ])('names the variable of a bad value: %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
