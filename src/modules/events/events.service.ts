/**
 * The events API: a user's outbox, read back. It lets an integrator catch up after downtime
 * (or instead of webhooks) by paging with a cursor: `after` the last id seen, oldest first.
 * The cursor never skips an event, on SQLite and on PostgreSQL (events.repository.ts).
 */
import { Errors } from '../../errors.js';
import type { AppContext } from '../../context.js';
import type { EventName, WebhookType } from './events.catalogue.js';
import * as repo from './events.repository.js';
import { DEFAULT_EVENTS_LIMIT } from './events.schemas.js';

export interface EventsQueryInput {
  after?: number;
  limit?: number;
  type?: WebhookType;
  event?: EventName;
  order?: 'asc' | 'desc';
}

export class EventsService {
  constructor(private readonly ctx: AppContext) {}

  /**
   * One page and the cursor to continue from: the highest id returned (the last one oldest
   * first, the first one newest first), else the one given. Newest first, the cursor is where a
   * reader that only wants what comes next starts from.
   */
  async list(userId: number, q: EventsQueryInput): Promise<{ items: repo.EventRow[]; cursor: number }> {
    const after = q.after ?? 0;
    const items = await repo.listUserEvents(this.ctx.store.db, userId, {
      after,
      limit: q.limit ?? DEFAULT_EVENTS_LIMIT,
      type: q.type,
      name: q.event,
      newestFirst: q.order === 'desc',
    });
    return { items, cursor: Math.max(after, items[0]?.id ?? 0, items.at(-1)?.id ?? 0) };
  }

  /** One of the user's events; unknown, malformed or another user's: 404 `Event not found`. */
  async find(userId: number, rawId: string): Promise<repo.EventRow> {
    const id = /^[1-9][0-9]{0,14}$/.test(rawId) ? Number(rawId) : null;
    const row = id === null ? undefined : await repo.findUserEvent(this.ctx.store.db, userId, id);
    if (!row) throw Errors.eventNotFound();
    return row;
  }
}
