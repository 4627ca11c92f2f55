/**
 * The one way a view reads the API: `useApi(load, deps)` runs `load` when the view mounts and when
 * `deps` change (the last answer dropped: the view shows its Loading state again), and again after
 * `reload()` (the last answer kept on screen until the new one comes, as after an action). A
 * failed call is thrown by `ok` as an `ApiError` with the envelope's message in words; anything
 * else that fails (the service cannot be reached) is shown as one sentence.
 */
import { useEffect, useState } from 'preact/hooks';
import { failure } from './api.js';

const UNREACHABLE = 'The service could not be reached.';

/** An answer of the API that was not a success: its message in words, as a view shows it. */
export class ApiError extends Error {}

/** The answer's `data`, or an `ApiError` with the envelope's message (`fallback` when it has none). */
export function ok<T>(r: { data?: T; error?: unknown }, fallback: string): T {
  if (r.data === undefined) throw new ApiError(failure(r.error, fallback));
  return r.data;
}

export interface Loaded<T> {
  /** The last answer; `null` until the first one (and again after `deps` change). */
  data: T | null;
  /** What went wrong, in words; cleared by the next answer that succeeds. */
  error: string | null;
  /** A read is under way (the first one, a reload, or one after `deps` changed). */
  loading: boolean;
  /** Read again, keeping what is shown until the answer. */
  reload: () => void;
}

/** Reads `load` when `deps` change and again after `reload()`; an answer to an older read is dropped. */
export function useApi<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    setData(null);
    setError(null);
  }, deps);
  useEffect(() => {
    let current = true;
    setLoading(true);
    void load()
      .then((value) => {
        if (!current) return;
        setData(value);
        setError(null);
      })
      .catch((e: unknown) => {
        if (current) setError(e instanceof ApiError ? e.message : UNREACHABLE);
      })
      .finally(() => {
        if (current) setLoading(false);
      });
    return () => {
      current = false;
    };
  }, [...deps, version]);
  return { data, error, loading, reload: () => setVersion((v) => v + 1) };
}

/** The rows a listing reads at once. */
export const PAGE = 20;
