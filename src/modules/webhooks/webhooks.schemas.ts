/**
 * TypeBox schemas of the webhook routes: they validate requests, serialise responses (so a field
 * that is not listed here, such as the encrypted secret or wallet_id, can never leave), and feed
 * the OpenAPI document.
 *
 * What a schema cannot express (event names that depend on `type`, reserved header names, the
 * URL's scheme and destination) is checked by the service with the same wording.
 */
import { PageQuerySchema } from '../../http/pagination.js';
import { Type, type Static } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import { WEBHOOK_TYPES, type WebhookType } from '../events/events.catalogue.js';

export const LIMITS = {
  urlLength: 2048,
  events: 20,
  eventNameLength: 64,
  headers: 20,
  headerNameLength: 256,
  headerValueLength: 1024,
  signatureLength: 1024,
  webhooksPerWallet: 100,
} as const;

const WebhookTypeSchema = Type.Unsafe<WebhookType>({ type: 'string', enum: [...WEBHOOK_TYPES] });
const StatusSchema = Type.Unsafe<'active' | 'inactive'>({ type: 'string', enum: ['active', 'inactive'] });
const Url = Type.String({ format: 'uri', maxLength: LIMITS.urlLength, description: 'http(s) URL that receives the deliveries' });
const Events = Type.Array(Type.String({ maxLength: LIMITS.eventNameLength }), {
  minItems: 1,
  maxItems: LIMITS.events,
  description: 'short (`created`) or dotted (`charge.created`) names of the type, or `*`',
});
// `type: [x, 'null']` rather than a union, so a wrong value gets one plain message.
const Signature = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  maxLength: LIMITS.signatureLength,
  description: 'secret that signs every delivery; empty or null for none',
});
const WithHeaders = Type.Unsafe<Record<string, string> | null>({
  type: ['object', 'null'],
  additionalProperties: { type: 'string', maxLength: LIMITS.headerValueLength },
  maxProperties: LIMITS.headers,
  description: 'extra headers sent with every delivery',
});

export const CreateWebhookBody = Type.Object({
  url: Url,
  type: WebhookTypeSchema,
  events: Events,
  signature: Type.Optional(Signature),
  with_headers: Type.Optional(WithHeaders),
});
export type CreateWebhookInput = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Object({
  url: Type.Optional(Url),
  events: Type.Optional(Events),
  status: Type.Optional(StatusSchema),
  signature: Type.Optional(Signature),
  with_headers: Type.Optional(WithHeaders),
});
export type UpdateWebhookInput = Static<typeof UpdateWebhookBody>;

export const WalletParams = Type.Object({ wallet: Type.String() });
export const EventParams = Type.Object({ wallet: Type.String(), event: Type.String() });
export const WebhookParams = Type.Object({ wallet: Type.String(), webhook: Type.String() });
export const DeliveryParams = Type.Object({ wallet: Type.String(), webhook: Type.String(), delivery: Type.String() });

export const PageQuery = Type.Object(PageQuerySchema);

const DateTime = Type.String({ description: 'UTC datetime YYYY-MM-DD HH:MM:SS' });

export const WebhookData = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  type: Type.String(),
  status: Type.String(),
  events: Type.Array(Type.String()),
  headers: Type.Record(Type.String(), Type.String()),
  disabled_reason: Type.Union([Type.Literal('gone'), Type.Literal('failing'), Type.Null()], {
    description:
      'why the service made it inactive: `gone` (the receiver answered 410), `failing` (every delivery failed for WEBHOOK_DISABLE_AFTER_S), or null',
  }),
  disabled_at: Type.Union([DateTime, Type.Null()], { description: 'when it became inactive; null while active' }),
  created_at: DateTime,
  updated_at: DateTime,
});
export type WebhookView = Static<typeof WebhookData>;
export const WebhookRef = component('Webhook', WebhookData);

export const DeletedWebhookData = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  type: Type.String(),
  events: Type.Array(Type.String()),
  signature: Type.Union([Type.String(), Type.Null()]),
  status: Type.String(),
  deleted_at: DateTime,
});
export type DeletedWebhookView = Static<typeof DeletedWebhookData>;

export const EventInfoData = Type.Object({
  event_name: Type.String(),
  description: Type.String(),
  payload: Type.Object({}, { additionalProperties: true }),
});

export const DeliveryData = Type.Object({
  id: Type.Integer(),
  uuid: Type.String({ description: 'the X-Webhook-Delivery / webhook-id header value' }),
  event: Type.String(),
  status: Type.String({ description: 'pending, retrying, delivered or failed' }),
  attempts: Type.Integer({ description: 'HTTP attempts made so far, the first included' }),
  response_status: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  next_attempt_at: Type.Union([DateTime, Type.Null()]),
  delivered_at: Type.Union([DateTime, Type.Null()]),
  created_at: DateTime,
  updated_at: DateTime,
});
export type DeliveryView = Static<typeof DeliveryData>;
export const DeliveryRef = component('Delivery', DeliveryData);

export const AttemptData = Type.Object({
  attempt: Type.Integer({ description: 'its number, the first attempt being 1' }),
  at: DateTime,
  response_status: Type.Union([Type.Integer(), Type.Null()], { description: 'the HTTP status answered; null when none came' }),
  duration_ms: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why it failed (network error or status), or null' }),
  response_body: Type.Union([Type.String(), Type.Null()], { description: 'the first 1 KiB of the answer' }),
});
export type AttemptView = Static<typeof AttemptData>;

const { attempts: _count, ...deliveryFields } = DeliveryData.properties;
export const DeliveryDetailData = Type.Object({
  ...deliveryFields,
  attempts: Type.Array(AttemptData, { description: 'every HTTP attempt, oldest first' }),
});
export type DeliveryDetailView = Static<typeof DeliveryDetailData>;

export const RecoverBody = Type.Object({
  since: Type.String({
    maxLength: 19,
    description: 'UTC datetime YYYY-MM-DD HH:MM:SS, at most EVENT_RETENTION_DAYS ago: failed deliveries created since then are sent again',
    examples: ['2025-03-14 00:00:00'],
  }),
});
export type RecoverInput = Static<typeof RecoverBody>;

export const RecoverData = Type.Object({ count: Type.Integer({ description: 'failed deliveries queued to be sent again' }) });
