/**
 * The API's own description: the OpenAPI 3.1 document generated from the route schemas
 * (@fastify/swagger), served bare and public at GET /api/openapi.json, and an interactive
 * reference at GET /api/docs.
 *
 * The reference is Swagger UI from @fastify/swagger-ui: the plugin ships swagger-ui-dist's
 * script, styles and images inside the npm package and serves them from /api/docs/static, so
 * the page loads nothing from another host and works on a machine without internet access.
 * (Scalar's Fastify plugin also bundles its script, but its page fetches fonts from Scalar's
 * CDN unless told otherwise, and its "try it" requests may go through Scalar's proxy.)
 * The page's Content-Security-Policy allows only this origin, so a future asset from
 * elsewhere would fail loudly in the browser test instead of quietly leaking requests. A token
 * given to its "Authorize" dialog is kept in memory only (gone with the tab or a reload).
 */
import type { RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TSchema } from '@sinclair/typebox';
import { describeResponses, ERROR_EXAMPLES, exampleOf } from './examples.js';
import { operationIdOf } from './operation-ids.js';
import type { App } from './types.js';

export const OPENAPI_PATH = '/api/openapi.json';
export const DOCS_PATH = '/api/docs';

const DOCS_CSP = {
  'default-src': ["'self'"],
  'base-uri': ["'self'"],
  'connect-src': ["'self'"],
  'font-src': ["'self'", 'data:'],
  'frame-ancestors': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'object-src': ["'none'"],
  'script-src': ["'self'"],
  // Swagger UI's React components set style attributes.
  'style-src': ["'self'", "'unsafe-inline'"],
};

const DESCRIPTION = `A self-hostable wallet and payment service for EVM chains.

Every response is the envelope \`{status, message, data}\`, errors included. Authenticate with
\`POST /api/auth/login\`, then send \`Authorization: Bearer <token>\`. Amounts are strings with
exactly 18 decimal places; datetimes are UTC \`YYYY-MM-DD HH:MM:SS\`. Each authenticated user has
a request budget per minute (\`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\`, 429 with
\`Retry-After\`). Every response carries \`X-Request-Id\`.`;

/** package.json's `license`, as an SPDX identifier (OpenAPI 3.1 takes `identifier` or `url`, not both). */
const LICENSE = { name: 'MIT', identifier: 'MIT' };

/**
 * Relative: the API is this origin's `/api/...`, wherever the document was fetched from (the
 * URL OpenAPI assumes when `servers` is left out, said explicitly). Not PUBLIC_URL: that is where
 * payers reach the checkout, and the reference reached through another address (a tunnel, the
 * loopback) would send "Try it out" there, which its Content-Security-Policy refuses. Not the
 * request's Host either: the document would then say whatever a caller put in that header.
 */
const SERVERS = [{ url: '/', description: 'This service: the origin that served this document' }];

export interface RegisteredRoute {
  method: string;
  url: string;
  /** Left out of the document on purpose (the document itself, the reference's assets, /metrics). */
  hidden: boolean;
}

const registered = new WeakMap<object, RegisteredRoute[]>();

/** Every route the app registered (HEAD routes Fastify adds for GET excluded), for the document's tests. */
export function registeredRoutes(app: App): RegisteredRoute[] {
  return registered.get(app) ?? [];
}

interface DocumentedSchema {
  hide?: boolean;
  operationId?: string;
  body?: TSchema;
  response?: Record<string, TSchema>;
}

/** Every response gets a description and an example, the body an example (see examples.ts). */
function addExamples(schema: DocumentedSchema): void {
  if (schema.response) schema.response = describeResponses(schema.response);
  const body = schema.body as (TSchema & { examples?: unknown[] }) | undefined;
  if (body && !Array.isArray(body.examples)) schema.body = { ...body, examples: [exampleOf(body)] } as TSchema;
}

/**
 * The route's operationId from the one table (operation-ids.ts). A route of several methods
 * shares one schema and so cannot have an id per method: none is set, and the test names it.
 */
function addOperationId(route: RouteOptions, methods: string[]): void {
  const id = methods.length === 1 ? operationIdOf(methods[0]!, route.url) : undefined;
  if (id === undefined) return;
  route.schema = { ...(route.schema ?? {}), operationId: id };
}

interface ResponseObject {
  description?: string;
  content?: Record<string, { example?: unknown }>;
}
interface GeneratedDocument {
  paths?: Record<string, Record<string, { responses?: Record<string, ResponseObject | { $ref: string }> } | undefined>>;
  components?: { responses?: Record<string, ResponseObject> };
}

/**
 * The error responses as shared components: an operation's error response that is exactly the
 * status's own (ERROR_EXAMPLES: its description, its example, the error envelope) is replaced by a
 * `$ref` to `#/components/responses/<name>`, listed once. A response a route words for itself
 * (the login's 401, for one) stays where it is.
 */
export function shareErrorResponses<T extends GeneratedDocument>(doc: T): T {
  const shared: Record<string, ResponseObject> = {};
  const sharedJson = new Map<string, string>();
  for (const operations of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(operations)) {
      for (const [code, response] of Object.entries(op?.responses ?? {})) {
        const known = ERROR_EXAMPLES[Number(code)];
        if (!known || '$ref' in response || response.description !== known.description) continue;
        const example = { status: 'error', message: known.message, data: known.data ?? null };
        const json = JSON.stringify(response);
        if (!sharedJson.has(known.name)) {
          if (JSON.stringify(response.content?.['application/json']?.example) !== JSON.stringify(example)) continue;
          sharedJson.set(known.name, json);
          shared[known.name] = response;
        }
        if (sharedJson.get(known.name) === json) op!.responses![code] = { $ref: `#/components/responses/${known.name}` };
      }
    }
  }
  doc.components = { ...doc.components, responses: { ...doc.components?.responses, ...shared } };
  return doc;
}

/** Registers the generator (before any route, so it sees them all), the document and the reference. */
export async function installDocs(app: App, version: string): Promise<void> {
  const routes: RegisteredRoute[] = [];
  registered.set(app, routes);
  app.addHook('onRoute', (route: RouteOptions) => {
    const hidden = (route.schema as DocumentedSchema | undefined)?.hide === true || route.url.startsWith(DOCS_PATH);
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter((m) => m !== 'HEAD');
    for (const m of methods) routes.push({ method: m, url: route.url, hidden });
    if (hidden) return;
    addOperationId(route, methods);
    if (route.schema) addExamples(route.schema as DocumentedSchema);
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Wallet and Payment Service API', version, description: DESCRIPTION, license: LICENSE },
      servers: SERVERS,
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    // The standard error responses listed once, under components.responses.
    transformObject: (generated) =>
      'openapiObject' in generated ? shareErrorResponses(generated.openapiObject as GeneratedDocument) : generated.swaggerObject,
    // The shared schemas (src/http/components.ts) under their own names, `#/components/schemas/Transaction`,
    // rather than the plugin's numbered `def-0`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });

  // `/docs` is where the reference is looked for first; it lives under /api with the API.
  app.get('/docs', { schema: { hide: true } }, async (_req, reply) => reply.redirect(DOCS_PATH));
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async (_req, reply) => {
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(app.swagger()));
  });

  // In a scope of its own, so that its hook runs for the reference's routes only, not for every
  // request the service answers.
  await app.register(async (scope) => {
    // @fastify/swagger-ui redirects static/index.html to the page by rewriting a URL that must
    // end in `index.html`: with a query string it redirects to itself forever. Send it to the page.
    scope.addHook('onRequest', (req, reply, done) => {
      if (req.url.startsWith(`${DOCS_PATH}/static/index.html?`)) return void reply.redirect(`${DOCS_PATH}/`);
      done();
    });
    await scope.register(swaggerUi, {
      routePrefix: DOCS_PATH,
      staticCSP: DOCS_CSP,
      // The bearer token given to "Authorize" stays in the page's memory: persisting it would
      // write it to localStorage, where it outlives the tab and any script of this origin reads it.
      uiConfig: { docExpansion: 'list', deepLinking: true, displayRequestDuration: true, persistAuthorization: false },
      theme: { title: 'Wallet and Payment Service API' },
    });
  });
}
