import { Type } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import { requireUser } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import type { EventsQueryInput, EventsService } from './events.service.js';
import { EventParams, EventRef, EventsQuery } from './events.schemas.js';
import { eventView } from './events.views.js';

export async function eventRoutes(app: App, events: EventsService): Promise<void> {
  app.get(
    '/events',
    {
      config: { scope: 'read' },
      schema: {
        tags: ['events'],
        summary: 'The user’s events after a cursor, oldest first (X-Next-Cursor: the highest id returned)',
        description:
          'Every event of the user with an id above `after`, oldest first (or, with `order=desc`, the newest `limit` of them, newest first), filtered by `type` or `event`; `data` is exactly what a webhook receives. Page with `after` = the `X-Next-Cursor` header: no event is ever skipped, also while others are being written (see docs/integrating.md). `order=desc&limit=1` tells where to start following from now on.',
        querystring: EventsQuery,
        response: responses(Type.Array(EventRef), [403]),
      },
    },
    async (req, reply) => {
      const { items, cursor } = await events.list(requireUser(req).id, req.query as EventsQueryInput);
      reply.header('x-next-cursor', String(cursor));
      return ok(items.map(eventView), 'Events retrieved');
    },
  );

  app.get(
    '/events/:id',
    {
      config: { scope: 'read' },
      schema: {
        tags: ['events'],
        summary: 'One event',
        description: "One event of the user by id; another user's event is 404 `Event not found`.",
        params: EventParams,
        response: responses(EventRef, [403]),
      },
    },
    async (req) => ok(eventView(await events.find(requireUser(req).id, req.params.id)), 'Event retrieved'),
  );
}
