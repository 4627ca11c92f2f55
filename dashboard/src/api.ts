/**
 * The dashboard's API client: openapi-fetch typed with `paths` generated from the service's own
 * OpenAPI document (schema.d.ts, `npm run dashboard:types`), so every call the dashboard makes is
 * checked against the document integrators use. The login token lives in this tab's session
 * storage only (never a cookie, never local storage).
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema.js';

const TOKEN_KEY = 'wallet-service.token';

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

const bearer: Middleware = {
  onRequest({ request }) {
    const token = session.token();
    if (token) request.headers.set('Authorization', `Bearer ${token}`);
    return request;
  },
  onResponse({ response }) {
    // A token that expired or was revoked: back to the sign-in form.
    if (response.status === 401 && session.token()) {
      session.clear();
      window.dispatchEvent(new Event('signed-out'));
    }
    return response;
  },
};

/** The `data` of a 200 answer to `method` on `path`, as the OpenAPI document describes it. */
export type Data<P extends keyof paths, M extends 'get' | 'post' = 'get'> = paths[P][M] extends {
  responses: { 200: { content: { 'application/json': { data: infer D } } } };
}
  ? D
  : never;

export const api = createClient<paths>({ baseUrl: window.location.origin });
api.use(bearer);

/** The envelope's message of a failed call, in words. */
export function failure(error: unknown, fallback: string): string {
  const e = error as { message?: unknown; data?: Record<string, string[]> | null } | undefined;
  const fields =
    e?.data && typeof e.data === 'object'
      ? Object.values(e.data)
          .flat()
          .filter((x) => typeof x === 'string')
      : [];
  if (fields.length > 0) return fields.join(' ');
  return typeof e?.message === 'string' && e.message !== '' ? e.message : fallback;
}
