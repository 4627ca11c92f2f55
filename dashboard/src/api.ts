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

/** Tries to revoke a token for this long after a sign-out whose first attempt failed. */
const LOGOUT_TRIES = 5;

/**
 * Signs out: this tab forgets the token at once (the sign-in form is shown whatever the service
 * answers), then the token is revoked, tried again while the service cannot be reached or
 * answers a 5xx (the service never refuses a logout for too many requests).
 */
export async function signOut(): Promise<void> {
  const token = session.token();
  session.clear();
  window.dispatchEvent(new Event('signed-out'));
  if (token === null) return;
  for (let i = 0; i < LOGOUT_TRIES; i++) {
    const status = await fetch(`${window.location.origin}/api/auth/logout`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}` },
    }).then(
      (r) => r.status,
      () => 0,
    );
    // Revoked (200) or already of no use (401): done. Anything else: again, a little later each time.
    if (status === 200 || status === 401) return;
    await new Promise((r) => setTimeout(r, 1000 * 2 ** i));
  }
}

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
    // Too many requests: the message says how long to wait (from Retry-After), wherever it is shown.
    const wait = retryAfterS(response);
    if (wait !== null) {
      const message = `Too many requests: wait ${wait} s, then try again.`;
      const headers = new Headers(response.headers);
      headers.delete('content-length');
      return new Response(JSON.stringify({ status: 'error', message, data: null }), { status: 429, headers });
    }
    return response;
  },
};

/** The seconds a 429 answer asks to wait before the next request (at least 1), or null for any other answer. */
export function retryAfterS(response: Response): number | null {
  if (response.status !== 429) return null;
  const s = Number(response.headers.get('retry-after'));
  return Number.isFinite(s) && s >= 1 ? Math.ceil(s) : 1;
}

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
