/**
 * What `npm start` prints once it listens: where the service and its reference are, where its
 * data lives, which database, each network with its RPC origin only (a path or query may hold
 * an API key), and one warning line for each development default still in force.
 */
import { join } from 'node:path';
import type { Config } from './config.js';
import type { NetworkRow } from './db/types.js';
import { redactUrl } from './lib/redact.js';
import { DOCS_PATH } from './http/docs.js';

export interface BannerInput {
  config: Config;
  url: string;
  driver: string;
  networks: Pick<NetworkRow, 'id' | 'name' | 'chain_id' | 'rpc_url'>[];
}

/** The development defaults in force, each as one warning sentence. */
export function developmentWarnings(config: Config): string[] {
  const out: string[] = [];
  if (config.appKey === null) {
    out.push(
      `APP_KEY is not set: secrets are encrypted with the development key generated in ${join(config.dataDir, 'app.key')}; set APP_KEY in production`,
    );
  }
  if (config.devnet.register) {
    out.push('the local devnet (anvil, chain id 31337) is registered as a network: its coins are not real; set DEVNET=off in production');
  }
  if (config.webhook.allowPrivate) {
    out.push('WEBHOOK_ALLOW_PRIVATE is on: webhooks may target loopback and private addresses; turn it off in production');
  }
  return out;
}

export function bannerLines(b: BannerInput): string[] {
  const lines = [
    `wallet service listening on ${b.url}`,
    `  dashboard:     ${b.url}/dashboard`,
    `  API reference: ${b.url}${DOCS_PATH}`,
    `  data folder:   ${b.config.dataDir}`,
    `  database:      ${b.driver}`,
  ];
  if (b.networks.length === 0) lines.push('  networks:      none (add one with `npm run cli -- network:add`)');
  for (const n of b.networks) lines.push(`  network #${n.id}: ${n.name} (chain ${n.chain_id}) via ${redactUrl(n.rpc_url)}`);
  for (const w of developmentWarnings(b.config)) lines.push(`WARNING: ${w}`);
  return lines;
}
