/**
 * Page-number pagination, the same on every list route: `page` (≥ 1, default 1) and `limit`
 * (1–1000, default 10) in the query; `data` stays an array and the page goes in headers:
 * X-Pagination-Page/-Limit/-Total/-Pages and an RFC 8288 Link header with next/prev (and
 * first/last) where they exist. A page past the end is an empty array.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';

export const MAX_PAGE_LIMIT = 1000;
export const DEFAULT_PAGE_LIMIT = 10;

export const PageQuerySchema = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT })),
};

/** The validated query's page and limit, defaults applied. */
export function pageOf(q: { page?: number; limit?: number }): { page: number; limit: number } {
  return { page: q.page ?? 1, limit: q.limit ?? DEFAULT_PAGE_LIMIT };
}

export interface PageInfo {
  page: number;
  limit: number;
  total: number;
}

export function pageCount(p: PageInfo): number {
  return Math.ceil(p.total / p.limit);
}

export function setPaginationHeaders(
  req: FastifyRequest,
  reply: FastifyReply,
  p: PageInfo,
  keep: Record<string, string | undefined> = {},
): void {
  const pages = pageCount(p);
  const path = req.url.split('?')[0] ?? '';
  const href = (page: number) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(keep)) if (v !== undefined) q.set(k, v);
    q.set('page', String(page));
    q.set('limit', String(p.limit));
    return `<${path}?${q.toString()}>`;
  };
  const links: string[] = [];
  if (pages > 0) links.push(`${href(1)}; rel="first"`);
  if (p.page > 1 && pages > 0) links.push(`${href(Math.min(p.page - 1, pages))}; rel="prev"`);
  if (p.page < pages) links.push(`${href(p.page + 1)}; rel="next"`);
  if (pages > 0) links.push(`${href(pages)}; rel="last"`);
  reply.header('x-pagination-page', String(p.page));
  reply.header('x-pagination-limit', String(p.limit));
  reply.header('x-pagination-total', String(p.total));
  reply.header('x-pagination-pages', String(pages));
  if (links.length > 0) reply.header('link', links.join(', '));
}
