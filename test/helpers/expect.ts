/** Assertions shared by the HTTP tests. */
import { expect } from 'vitest';
import type { ApiResponse } from './app.js';

/** Field name → its messages, as the 422 envelope's `data` carries them. */
export type FieldErrors = Record<string, string[]>;

/**
 * A validation failure as docs/architecture.md ("HTTP") words it: status 422 and exactly the envelope
 * `{status: "error", message, data}` where `data` is `fields` and `message` is the first
 * field's first message without its final period (so list the fields in the order the
 * service reports them). `label` names the case in a loop's failure message.
 */
export function expectValidationError(res: ApiResponse, fields: FieldErrors, label?: string): void {
  const first = Object.values(fields)[0]?.[0];
  if (first === undefined) throw new Error('expectValidationError needs at least one field message');
  expect(res.status, label ?? JSON.stringify(res.body)).toBe(422);
  expect(res.body, label).toEqual({ status: 'error', message: first.replace(/\.$/, ''), data: fields });
}
