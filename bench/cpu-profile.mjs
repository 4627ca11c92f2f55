// Loaded with `--import ./bench/cpu-profile.mjs` (BENCH_NODE_OPTIONS): the first SIGUSR2 starts a
// CPU profile, the next writes it to $BENCH_PROFILE_DIR (default /tmp/prof) as <pid>-<n>.cpuprofile.
import { Session } from 'node:inspector';
import { mkdirSync, writeFileSync } from 'node:fs';

const dir = process.env.BENCH_PROFILE_DIR ?? '/tmp/prof';
const session = new Session();
session.connect();
let running = false;
let n = 0;
process.on('SIGUSR2', () => {
  if (!running) {
    session.post('Profiler.enable', () => session.post('Profiler.start'));
    running = true;
    return;
  }
  running = false;
  session.post('Profiler.stop', (err, result) => {
    if (err) return;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/${process.pid}-${++n}.cpuprofile`, JSON.stringify(result.profile));
  });
});
