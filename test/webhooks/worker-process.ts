/**
 * A delivery worker as its own process, for the multi-process test: configured from the
 * environment like the service, prints `READY` once running and `STATS {json}` after a SIGTERM
 * drain. Run with `node --import tsx test/webhooks/worker-process.ts`.
 */
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createContext, openStore } from '../../src/runtime.js';
import { startDeliveryWorker } from '../../src/workers/deliveries.js';

const config = loadConfig();
const log = createLogger(config.logLevel, process.stderr);
const store = await openStore(config, log);
const ctx = createContext(config, store, log);
const worker = startDeliveryWorker(ctx);
process.stdout.write(`READY ${worker.id}\n`);

process.once('SIGTERM', () => {
  void (async () => {
    await worker.stop();
    process.stdout.write(`STATS ${JSON.stringify({ id: worker.id, ...worker.stats() })}\n`);
    await store.destroy();
    process.exit(0);
  })();
});
