/**
 * keys:rotate: re-encrypts every secret that is not under the active APP_KEY yet, page by page
 * (each value its own small update, so a running service keeps working meanwhile: it reads both
 * keys while APP_PREVIOUS_KEYS still holds the old one). Afterwards the old key can leave
 * APP_PREVIOUS_KEYS. Idempotent: a second run finds nothing to do.
 *
 * Values of the earlier format (`v1`, bound to the key only) are rewritten bound to their row.
 * When a run leaves none, it records so (`app_flags`): from then on every process started, and
 * this one, refuses a `v1` value. One met later was copied or restored there (a swapped
 * ciphertext, say from an old backup); rewriting it bound to the row it sits in would launder it.
 */
import type { AppContext } from '../../context.js';
import { UnboundSecretRefused } from '../../lib/crypto.js';
import {
  countUnbound,
  isUnboundRefused,
  markUnboundRefused,
  pageSecrets,
  replaceSecret,
  SECRET_COLUMNS,
  type SecretColumn,
} from './secrets.repository.js';

const PAGE = 500;

export interface RotationReport {
  key_id: string;
  rotated: Record<SecretColumn['name'], number>;
  already_current: number;
  total: number;
  /** Whether `v1` values are refused from now on (none is left). */
  unbound_refused: boolean;
}

/** At start: once keys:rotate has left no `v1` value, this process refuses one too. */
export async function loadSecretFormat(ctx: AppContext): Promise<void> {
  if (await isUnboundRefused(ctx.store.db)) ctx.secrets.refuseUnbound();
}

export async function rotateSecrets(ctx: AppContext): Promise<RotationReport> {
  await loadSecretFormat(ctx);
  const active = ctx.secrets.activeKeyId;
  const report: RotationReport = {
    key_id: active,
    rotated: Object.fromEntries(SECRET_COLUMNS.map((c) => [c.name, 0])) as RotationReport['rotated'],
    already_current: 0,
    total: 0,
    unbound_refused: false,
  };
  for (const column of SECRET_COLUMNS) await rotateColumn(ctx, column, report);
  report.unbound_refused = await refuseUnboundWhenNoneLeft(ctx);
  return report;
}

async function rotateColumn(ctx: AppContext, column: SecretColumn, report: RotationReport): Promise<void> {
  let after = 0;
  for (;;) {
    const rows = await pageSecrets(ctx.store.db, column, after, PAGE);
    if (rows.length === 0) break;
    for (const row of rows) {
      report.total += 1;
      if (ctx.secrets.isCurrent(row.value)) {
        report.already_current += 1;
        continue;
      }
      // Decrypting with a key that is not configured throws: the run stops, nothing is lost.
      // An older value (another key, or `v1`: not bound to its row) is written bound to its row.
      const place = { table: column.table, column: column.column, id: row.id };
      const fresh = ctx.secrets.encrypt(openForRotation(ctx, column, row), place);
      if (await replaceSecret(ctx.store.db, column, row.id, row.value, fresh)) report.rotated[column.name] += 1;
    }
    after = rows[rows.length - 1]!.id;
  }
}

/** The value's plaintext; a `v1` value refused (keys:rotate left none before) stops the run, naming its row. */
function openForRotation(ctx: AppContext, column: SecretColumn, row: { id: number; value: string }): string {
  try {
    return ctx.secrets.decrypt(row.value, { table: column.table, column: column.column, id: row.id });
  } catch (e) {
    if (!(e instanceof UnboundSecretRefused)) throw e;
    throw new Error(
      `${column.table}.${column.column} of row ${row.id} holds an unbound (v1) value, refused since keys:rotate bound every value: it was copied or restored there; restore the row from a backup made since, or clear it`,
      { cause: e },
    );
  }
}

/** When no `v1` value is left in any column, record it and refuse one from now on. */
async function refuseUnboundWhenNoneLeft(ctx: AppContext): Promise<boolean> {
  for (const column of SECRET_COLUMNS) if ((await countUnbound(ctx.store.db, column)) > 0) return false;
  await markUnboundRefused(ctx.store.db, ctx.clock.nowMs());
  ctx.secrets.refuseUnbound();
  return true;
}
