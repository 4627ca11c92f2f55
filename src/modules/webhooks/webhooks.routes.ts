/**
 * Webhook routes. The wallet guard (404 `Wallet not found`) runs first on every route here (its
 * url has `:wallet`); each route that names a webhook or a delivery loads it in its own
 * preValidation hook, so a missing path object is a 404 before any 422 on the body.
 *
 * find-my-way prefers a static segment to a parameter at the same position, so
 * `/webhook/types`, `/webhook/create`, `/webhook/event/:event` and `/webhook/delete/:webhook`
 * are never taken for `/webhook/:webhook/...` (test/webhooks/routes.test.ts checks it).
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { Errors } from '../../errors.js';
import { parseId, requireWallet } from '../../http/auth.js';
import { ok, responses } from '../../http/envelope.js';
import { pageOf, setPaginationHeaders } from '../../http/pagination.js';
import type { App } from '../../http/types.js';
import { allows } from '../keys/keys.scopes.js';
import { commitResponse } from '../../http/idempotency.js';
import type { DeliveryRecord, WebhookRecord } from './webhooks.repository.js';
import {
  CreateWebhookBody,
  DeletedWebhookData,
  DeliveryRef,
  DeliveryDetailData,
  DeliveryParams,
  EventInfoData,
  EventParams,
  PageQuery,
  RecoverBody,
  RecoverData,
  UpdateWebhookBody,
  WalletParams,
  WebhookRef,
  WebhookParams,
  type CreateWebhookInput,
  type RecoverInput,
  type UpdateWebhookInput,
} from './webhooks.schemas.js';
import type { WebhooksService } from './webhooks.service.js';

const TAGS = ['webhooks'];

/** The `{webhook}` and `{delivery}` of a request, each loaded in its route's preValidation hook. */
interface PathObjects {
  loadWebhook(this: void, req: FastifyRequest): Promise<void>;
  loadDelivery(this: void, req: FastifyRequest): Promise<void>;
  webhook(req: FastifyRequest): WebhookRecord;
  delivery(req: FastifyRequest): DeliveryRecord;
}

function pathObjects(webhooks: WebhooksService): PathObjects {
  const webhookOf = new WeakMap<FastifyRequest, WebhookRecord>();
  const deliveryOf = new WeakMap<FastifyRequest, DeliveryRecord>();
  return {
    async loadWebhook(req) {
      const wallet = requireWallet(req);
      const id = parseId((req.params as Record<string, unknown>).webhook);
      if (id === null) throw Errors.webhookNotFound();
      webhookOf.set(req, await webhooks.find(wallet.id, id));
    },
    async loadDelivery(req) {
      const id = parseId((req.params as Record<string, unknown>).delivery);
      if (id === null) throw Errors.deliveryNotFound();
      deliveryOf.set(req, await webhooks.findDelivery(webhookOf.get(req)!, id));
    },
    webhook: (req) => webhookOf.get(req)!,
    delivery: (req) => deliveryOf.get(req)!,
  };
}

export async function webhookRoutes(app: App, webhooks: WebhooksService): Promise<void> {
  const objects = pathObjects(webhooks);
  readRoutes(app, webhooks);
  writeRoutes(app, webhooks, objects);
  deliveryRoutes(app, webhooks, objects);
  operationRoutes(app, webhooks, objects);
}

/** The wallet's webhooks, the webhook types and the event catalogue. */
function readRoutes(app: App, webhooks: WebhooksService): void {
  app.get(
    '/wallet/:wallet/webhook',
    {
      schema: {
        tags: TAGS,
        summary: "The wallet's webhooks, newest first, with their headers",
        description:
          'Every active webhook of the wallet (URL, type, events, extra headers). Secrets are never shown here. Header values are shown to login tokens and to API keys with `webhooks:write`; any other key sees each value as `***`.',
        params: WalletParams,
        response: responses(Type.Array(WebhookRef)),
      },
    },
    async (req) =>
      ok(
        await webhooks.list(requireWallet(req).id, { maskHeaders: req.apiKey !== null && !allows(req.apiKey.scopes, 'webhooks:write') }),
        'Webhooks',
      ),
  );

  app.get(
    '/wallet/:wallet/webhook/types',
    {
      schema: {
        tags: TAGS,
        summary: 'Webhook types',
        description: 'The event types a webhook can subscribe to, with their events.',
        params: WalletParams,
        response: responses(Type.Array(Type.String())),
      },
    },
    async () => ok(webhooks.types(), 'Webhook types'),
  );

  app.get(
    '/wallet/:wallet/webhook/event/:event',
    {
      schema: {
        tags: TAGS,
        summary: 'An event: its description and a sample of its data',
        description: 'What an event means and a sample of the data its deliveries carry.',
        params: EventParams,
        response: responses(EventInfoData),
      },
    },
    async (req) => ok(webhooks.event(req.params.event), 'Event'),
  );
}

/**
 * Create, delete, update. The bodies are validated against CreateWebhookBody /
 * UpdateWebhookBody before a handler runs; they are cast because the type provider reads
 * `Type.Unsafe` fields as `unknown`.
 */
function writeRoutes(app: App, webhooks: WebhooksService, objects: PathObjects): void {
  app.post(
    '/wallet/:wallet/webhook/create',
    {
      schema: {
        tags: TAGS,
        summary: 'Register a webhook',
        description:
          'Registers a URL to receive the chosen events of this wallet, signed with the secret (HMAC-SHA256) and sent with the optional extra headers; both are stored encrypted.',
        params: WalletParams,
        body: CreateWebhookBody,
        response: responses(WebhookRef),
      },
    },
    async (req) =>
      ok(
        await webhooks.create(requireWallet(req).id, req.body as CreateWebhookInput, {
          inTransaction: commitResponse(req, 'Webhook created', (v) => v),
        }),
        'Webhook created',
      ),
  );

  app.get(
    '/wallet/:wallet/webhook/delete/:webhook',
    {
      config: { noStore: true },
      preValidation: [objects.loadWebhook],
      schema: {
        tags: TAGS,
        summary: 'Delete a webhook (soft delete); the one response that shows its secret',
        description: 'Stops deliveries to the webhook and answers with its last state, secret included, once.',
        params: WebhookParams,
        response: responses(DeletedWebhookData),
      },
    },
    async (req) => ok(await webhooks.remove(objects.webhook(req)), 'Webhook deleted'),
  );

  app.post(
    '/wallet/:wallet/webhook/:webhook/update',
    {
      preValidation: [objects.loadWebhook],
      schema: {
        tags: TAGS,
        summary: 'Change a webhook: url, events, status, secret or headers',
        description: 'Changes the URL, the events, the secret or the headers of a webhook.',
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: responses(WebhookRef),
      },
    },
    async (req) => ok(await webhooks.update(objects.webhook(req), req.body as UpdateWebhookInput), 'Webhook updated'),
  );
}

/** A webhook's delivery log and the manual retry. */
function deliveryRoutes(app: App, webhooks: WebhooksService, objects: PathObjects): void {
  app.get(
    '/wallet/:wallet/webhook/:webhook/deliveries',
    {
      preValidation: [objects.loadWebhook],
      schema: {
        tags: TAGS,
        summary: "A webhook's deliveries, newest first, paginated (X-Pagination-* and Link headers)",
        description: 'Delivery history of a webhook, newest first: status, attempts, the last response status and error.',
        params: WebhookParams,
        querystring: PageQuery,
        response: responses(Type.Array(DeliveryRef)),
      },
    },
    async (req, reply) => {
      const { page, limit } = pageOf(req.query);
      const { items, total } = await webhooks.deliveries(objects.webhook(req), page, limit);
      setPaginationHeaders(req, reply, { page, limit, total });
      return ok(items, 'Deliveries');
    },
  );

  app.post(
    '/wallet/:wallet/webhook/:webhook/deliveries/:delivery/retry',
    {
      preValidation: [objects.loadWebhook, objects.loadDelivery],
      schema: {
        tags: TAGS,
        summary: 'Send a delivery again now',
        description: 'Schedules a delivery (failed or not) to be sent again at once; the retry counts as a new attempt.',
        params: DeliveryParams,
        response: responses(DeliveryRef),
      },
    },
    async (req) => ok(await webhooks.retry(objects.webhook(req), objects.delivery(req)), 'Delivery queued for retry'),
  );
}

/** One delivery with its attempts, the test send and the recovery of failed deliveries. */
function operationRoutes(app: App, webhooks: WebhooksService, objects: PathObjects): void {
  app.get(
    '/wallet/:wallet/webhook/:webhook/deliveries/:delivery',
    {
      preValidation: [objects.loadWebhook, objects.loadDelivery],
      schema: {
        tags: TAGS,
        summary: 'A delivery with every attempt',
        description:
          'One delivery of the webhook; `attempts` lists every HTTP attempt, oldest first: when it was made, the status answered, how long it took, the network error if any, and the first 1 KiB of the answer.',
        params: DeliveryParams,
        response: responses(DeliveryDetailData),
      },
    },
    async (req) => ok(await webhooks.deliveryDetail(objects.webhook(req), objects.delivery(req)), 'Delivery'),
  );

  app.post(
    '/wallet/:wallet/webhook/:webhook/test',
    {
      preValidation: [objects.loadWebhook],
      schema: {
        tags: TAGS,
        summary: 'Send a test event to the webhook',
        description:
          'Queues a delivery of the event `webhook.test` (data `{webhook_id, sent_at}`) to this webhook now, whatever its event filter, signed like any other; answers with the delivery. 400 when the webhook is inactive.',
        params: WebhookParams,
        response: responses(DeliveryRef),
      },
    },
    async (req) => ok(await webhooks.sendTest(objects.webhook(req)), 'Test delivery queued'),
  );

  app.post(
    '/wallet/:wallet/webhook/:webhook/recover',
    {
      preValidation: [objects.loadWebhook],
      schema: {
        tags: TAGS,
        summary: 'Send again every failed delivery since a time',
        description:
          'Every `failed` delivery of this webhook created at or after `since` (at most EVENT_RETENTION_DAYS back) is sent again now, as one more attempt of the same delivery (same delivery id); answers with how many. 400 when the webhook is inactive.',
        params: WebhookParams,
        body: RecoverBody,
        response: responses(RecoverData),
      },
    },
    async (req) => ok(await webhooks.recover(objects.webhook(req), req.body as RecoverInput), 'Deliveries queued'),
  );
}
