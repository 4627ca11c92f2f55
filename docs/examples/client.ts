/**
 * A typed client for this API with openapi-fetch, from types generated out of the service's own
 * OpenAPI document:
 *
 *   npx openapi-typescript http://127.0.0.1:8080/api/openapi.json -o api.d.ts
 *   npm install openapi-fetch
 *
 * Then: log in, list the wallets, create a charge on the first one. (test/operations/openapi.test.ts
 * generates the types, compiles this file with them and runs it against a real service.)
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './api.js';

export async function example(baseUrl: string, email: string, password: string) {
  const api = createClient<paths>({ baseUrl });

  const login = await api.POST('/api/auth/login', { body: { email, password } });
  if (!login.data) throw new Error(`login failed: ${login.error?.message}`);
  const token = login.data.data.token;
  const bearer: Middleware = {
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${token}`);
      return request;
    },
  };
  api.use(bearer);

  const wallets = await api.GET('/api/wallets');
  if (!wallets.data) throw new Error(`listing wallets failed: ${wallets.error?.message}`);
  const wallet = wallets.data.data[0];
  if (!wallet) throw new Error('no wallet yet');

  const charge = await api.POST('/api/wallet/{wallet}/charge/create', {
    params: { path: { wallet: String(wallet.id) } },
    body: { amount: '0.25', token: 'ETH', expires: 900, content: { title: 'Order 1001' } },
  });
  if (!charge.data) throw new Error(`creating a charge failed: ${charge.error?.message}`);
  return { wallet: wallet.name, charge: charge.data.data };
}
