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
import { commitResponse } from '../../http/idempotency.js';
import type { DeliveryRecord, WebhookRecord } from './webhooks.repository.js';
import {
  CreateWebhookBody,
  DeletedWebhookData,
  DeliveryData,
  DeliveryParams,
  EventInfoData,
  EventParams,
  PageQuery,
  UpdateWebhookBody,
  WalletParams,
  WebhookData,
  WebhookParams,
  type CreateWebhookInput,
  type UpdateWebhookInput,
} from './webhooks.schemas.js';
import type { WebhooksService } from './webhooks.service.js';

const TAGS = ['webhooks'];

export async function webhookRoutes(app: App, webhooks: WebhooksService): Promise<void> {
  const webhookOf = new WeakMap<FastifyRequest, WebhookRecord>();
  const deliveryOf = new WeakMap<FastifyRequest, DeliveryRecord>();

  async function loadWebhook(req: FastifyRequest): Promise<void> {
    const wallet = requireWallet(req);
    const id = parseId((req.params as Record<string, unknown>).webhook);
    if (id === null) throw Errors.webhookNotFound();
    webhookOf.set(req, await webhooks.find(wallet.id, id));
  }

  async function loadDelivery(req: FastifyRequest): Promise<void> {
    const id = parseId((req.params as Record<string, unknown>).delivery);
    if (id === null) throw Errors.deliveryNotFound();
    deliveryOf.set(req, await webhooks.findDelivery(webhookOf.get(req)!, id));
  }

  const webhook = (req: FastifyRequest) => webhookOf.get(req)!;
  // The bodies are validated against CreateWebhookBody / UpdateWebhookBody before a handler
  // runs; they are cast because the type provider reads `Type.Unsafe` fields as `unknown`.

  app.get(
    '/wallet/:wallet/webhook',
    {
      schema: {
        tags: TAGS,
        summary: "The wallet's webhooks, newest first, with their headers",
        params: WalletParams,
        response: responses(Type.Array(WebhookData)),
      },
    },
    async (req) => ok(await webhooks.list(requireWallet(req).id), 'Webhooks'),
  );

  app.get(
    '/wallet/:wallet/webhook/types',
    { schema: { tags: TAGS, summary: 'Webhook types', params: WalletParams, response: responses(Type.Array(Type.String())) } },
    async () => ok(webhooks.types(), 'Webhook types'),
  );

  app.get(
    '/wallet/:wallet/webhook/event/:event',
    {
      schema: {
        tags: TAGS,
        summary: 'An event: its description and a sample of its data',
        params: EventParams,
        response: responses(EventInfoData),
      },
    },
    async (req) => ok(webhooks.event(req.params.event), 'Event'),
  );

  app.post(
    '/wallet/:wallet/webhook/create',
    {
      schema: {
        tags: TAGS,
        summary: 'Register a webhook',
        params: WalletParams,
        body: CreateWebhookBody,
        response: responses(WebhookData),
      },
    },
    async (req) =>
      ok(
        await webhooks.create(requireWallet(req).id, req.body as CreateWebhookInput, { inTransaction: commitResponse(req, 'Webhook created', (v) => v) }),
        'Webhook created',
      ),
  );

  app.get(
    '/wallet/:wallet/webhook/delete/:webhook',
    {
      preValidation: [loadWebhook],
      schema: {
        tags: TAGS,
        summary: 'Delete a webhook (soft delete); the one response that shows its secret',
        params: WebhookParams,
        response: responses(DeletedWebhookData),
      },
    },
    async (req) => ok(await webhooks.remove(webhook(req)), 'Webhook deleted'),
  );

  app.post(
    '/wallet/:wallet/webhook/:webhook/update',
    {
      preValidation: [loadWebhook],
      schema: {
        tags: TAGS,
        summary: 'Change a webhook: url, events, status, secret or headers',
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: responses(WebhookData),
      },
    },
    async (req) => ok(await webhooks.update(webhook(req), req.body as UpdateWebhookInput), 'Webhook updated'),
  );

  app.get(
    '/wallet/:wallet/webhook/:webhook/deliveries',
    {
      preValidation: [loadWebhook],
      schema: {
        tags: TAGS,
        summary: "A webhook's deliveries, newest first, paginated (X-Pagination-* and Link headers)",
        params: WebhookParams,
        querystring: PageQuery,
        response: responses(Type.Array(DeliveryData)),
      },
    },
    async (req, reply) => {
      const { page, limit } = pageOf(req.query);
      const { items, total } = await webhooks.deliveries(webhook(req), page, limit);
      setPaginationHeaders(req, reply, { page, limit, total });
      return ok(items, 'Deliveries');
    },
  );

  app.post(
    '/wallet/:wallet/webhook/:webhook/deliveries/:delivery/retry',
    {
      preValidation: [loadWebhook, loadDelivery],
      schema: {
        tags: TAGS,
        summary: 'Send a delivery again now',
        params: DeliveryParams,
        response: responses(DeliveryData),
      },
    },
    async (req) => ok(await webhooks.retry(webhook(req), deliveryOf.get(req)!), 'Delivery queued for retry'),
  );
}
