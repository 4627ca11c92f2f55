import { Type } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import { EVENT_NAMES, WEBHOOK_TYPES } from './events.catalogue.js';

export const MAX_EVENTS_LIMIT = 1000;
export const DEFAULT_EVENTS_LIMIT = 100;

export const EventsQuery = Type.Object({
  after: Type.Optional(
    Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Cursor: the last id seen (default: from the oldest kept)' }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_EVENTS_LIMIT, description: `1-${MAX_EVENTS_LIMIT}, default ${DEFAULT_EVENTS_LIMIT}` }),
  ),
  type: Type.Optional(Type.String({ enum: [...WEBHOOK_TYPES] })),
  event: Type.Optional(Type.String({ enum: [...EVENT_NAMES], description: 'A dotted event name, e.g. charge.paid' })),
  order: Type.Optional(
    Type.String({
      enum: ['asc', 'desc'],
      description: '`asc` (default): oldest first, for paging with the cursor; `desc`: the newest `limit` events, newest first',
    }),
  ),
});

export const EventSchema = Type.Object({
  id: Type.Integer(),
  event: Type.String(),
  wallet_id: Type.Integer(),
  data: Type.Record(Type.String(), Type.Unknown(), { description: 'Exactly the `data` a webhook receives' }),
  created_at: Type.String(),
});

export const EventRef = component('Event', EventSchema);

export const EventParams = Type.Object({ id: Type.String() });
