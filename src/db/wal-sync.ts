/**
 * Makes SQLite's write-ahead log durable from libuv's thread pool: `fdatasync` of the `-wal`
 * file, the wait SQLite's `synchronous = FULL` makes at every COMMIT on the event loop's thread.
 *
 * With `synchronous = NORMAL` in WAL mode a COMMIT writes its frames to the WAL without a sync
 * (SQLite still syncs at checkpoints, so the file is never corrupt; only the last commits can be
 * lost on a power cut). A sync of the WAL after those writes makes every commit made before it
 * durable, as FULL would have: the group-commit driver (group-commit.ts) reports a transaction
 * only once a sync begun after its COMMIT has finished. The event loop serves requests and
 * webhook sends meanwhile.
 *
 * The file is opened once and kept (SQLite keeps the WAL, the same file, while a connection is
 * open; truncating it keeps it the same file). At most once a second a sync also checks, beside
 * it, that the path still names the file held (a `stat` at every sync was a measurable share of
 * the event loop under webhook load); if it was replaced, the new one is opened and synced too.
 */
import { open, stat, type FileHandle } from 'node:fs/promises';

export type WalSync = (() => Promise<void>) & { close(): Promise<void> };

/** How often a sync checks that the WAL's path still names the file held (ms). */
const CHECK_EVERY_MS = 1_000;

export function walSyncer(walPath: string): WalSync {
  let handle: Promise<{ fh: FileHandle; ino: number }> | null = null;
  let checkedAt = 0;
  const opened = () =>
    (handle ??= open(walPath, 'r')
      .then(async (fh) => ({ fh, ino: (await fh.stat()).ino }))
      .catch((err: unknown) => {
        handle = null;
        throw err;
      }));
  const sync = async (): Promise<void> => {
    const held = await opened();
    const at = performance.now();
    if (at - checkedAt < CHECK_EVERY_MS) return held.fh.datasync();
    checkedAt = at;
    const [, now] = await Promise.all([held.fh.datasync(), stat(walPath)]);
    if (now.ino === held.ino) return;
    handle = null;
    await held.fh.close().catch(() => undefined);
    await (await opened()).fh.datasync();
  };
  return Object.assign(sync, {
    close: async () => {
      const held = handle;
      handle = null;
      if (held) await (await held.catch(() => null))?.fh.close();
    },
  });
}
