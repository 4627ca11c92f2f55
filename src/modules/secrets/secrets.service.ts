/**
 * keys:rotate: re-encrypts every secret that is not under the active APP_KEY yet, page by page
 * (each value its own small update, so a running service keeps working meanwhile: it reads both
 * keys while APP_PREVIOUS_KEYS still holds the old one). Afterwards the old key can leave
 * APP_PREVIOUS_KEYS. Idempotent: a second run finds nothing to do.
 */
import type { AppContext } from '../../context.js';
import { pageSecrets, replaceSecret, SECRET_COLUMNS, type SecretColumn } from './secrets.repository.js';

const PAGE = 500;

export interface RotationReport {
  key_id: string;
  rotated: Record<SecretColumn['name'], number>;
  already_current: number;
  total: number;
}

export async function rotateSecrets(ctx: AppContext): Promise<RotationReport> {
  const active = ctx.secrets.activeKeyId;
  const report: RotationReport = {
    key_id: active,
    rotated: Object.fromEntries(SECRET_COLUMNS.map((c) => [c.name, 0])) as RotationReport['rotated'],
    already_current: 0,
    total: 0,
  };
  for (const column of SECRET_COLUMNS) {
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
        const fresh = ctx.secrets.encrypt(ctx.secrets.decrypt(row.value, place), place);
        if (await replaceSecret(ctx.store.db, column, row.id, row.value, fresh)) report.rotated[column.name] += 1;
      }
      after = rows[rows.length - 1]!.id;
    }
  }
  return report;
}
