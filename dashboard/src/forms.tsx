/**
 * The one way a dashboard form is built: `useForm(labels)` holds its field errors and its submit
 * state, `Field` shows a control with its label, hint and error next to it, and `submit` runs the
 * call. An error of the API (the envelope's `data`: field paths → messages) is shown next to the
 * field that caused it, in the words of the form's own label ("Amount must be greater than 0.",
 * never "amount" or "price.amount"); the first field in error is scrolled into view and focused.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { getAddress } from 'viem';
import { failure } from './api.js';

/** A form's fields: its name for each → the label the merchant reads. */
export type Labels = Record<string, string>;

/** What a field's control needs: its id, name, and its error's wiring for assistive technology. */
export interface ControlProps {
  id: string;
  name: string;
  'aria-invalid': boolean;
  'aria-describedby'?: string;
}

export interface Form {
  /** The form element: the first field in error is looked for in it. */
  ref: { current: HTMLFormElement | null };
  errors: Record<string, string>;
  /** An error that belongs to no field (the service refused the whole request). */
  general: string | null;
  busy: boolean;
  /** A field's control attributes (`id` is `{prefix}-{name}`). */
  control: (name: string) => ControlProps;
  label: (name: string) => string;
  /**
   * Runs `check` (client-side field errors) and, when it finds none, `call`; the answer's field
   * errors are mapped to the form's fields. Resolves to the answer's `data`, or undefined.
   */
  submit: <T>(call: () => Promise<{ data?: T; error?: unknown }>, check?: () => Record<string, string>) => Promise<T | undefined>;
  /** Clears every error (after a success, or when the form is closed). */
  clear: () => void;
  /** Clears one field's error: its value was changed, the error may no longer hold. */
  changed: (name: string) => void;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The API's message about `path` in the words of `label`: "The price.amount field must be a
 * number." → "Price must be a number."; "The selected tokens.0 is invalid." → "Token is invalid.";
 * any other mention of the path is replaced by the label.
 */
export function inWords(message: string, path: string, label: string): string {
  const p = escape(path);
  const words = message
    .replace(new RegExp(`^The selected ${p}\\b`), label)
    .replace(new RegExp(`^The ${p} field\\b`), label)
    .replace(new RegExp(`\\b${p}\\b`, 'g'), label.toLowerCase());
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The form field an API path belongs to: itself, or its nearest parent the form has (`tokens.0` → `tokens`). */
function fieldOf(path: string, labels: Labels, aliases: Record<string, string>): string | null {
  for (let p = path; p !== ''; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    if (aliases[p] !== undefined) return aliases[p];
    if (labels[p] !== undefined) return p;
  }
  return null;
}

/**
 * The envelope's field errors, each on the form's field it belongs to, in words; what belongs to
 * no field goes to `general` (its path, if any, turned into plain words).
 */
export function mapErrors(
  error: unknown,
  labels: Labels,
  aliases: Record<string, string> = {},
): { fields: Record<string, string>; general: string | null } {
  const e = error as { message?: unknown; data?: unknown } | undefined;
  const data = e?.data && typeof e.data === 'object' && !('reason' in e.data) ? (e.data as Record<string, unknown>) : null;
  const fields: Record<string, string> = {};
  const rest: string[] = [];
  for (const [path, messages] of Object.entries(data ?? {})) {
    const first = Array.isArray(messages) ? messages.find((m): m is string => typeof m === 'string') : undefined;
    if (first === undefined) continue;
    const field = fieldOf(path, labels, aliases);
    if (field !== null) fields[field] ??= inWords(first, path, labels[field]!);
    else rest.push(inWords(first, path, path.replace(/[._]/g, ' ')));
  }
  const general = rest.length > 0 ? rest.join(' ') : Object.keys(fields).length > 0 ? null : failure(error, 'It could not be done.');
  return { fields, general };
}

/** Refusals of the API without field paths that still belong to a field: its message → [the field, the words shown]. */
export type Placed = Record<string, [string, string]>;

/**
 * A form's errors and submit state; `prefix` makes its control ids unique on the page, `aliases`
 * maps an API path to the form's field (`price.amount` → `price`), `placed` puts a refusal on a field.
 */
export function useForm(prefix: string, labels: Labels, aliases: Record<string, string> = {}, placed: Placed = {}): Form {
  const ref = useRef<HTMLFormElement | null>(null);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [general, setGeneral] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [shown, setShown] = useState(0);
  useEffect(() => {
    if (shown === 0) return;
    const first =
      ref.current?.querySelector<HTMLElement>('[aria-invalid="true"]') ?? ref.current?.querySelector<HTMLElement>('[role="alert"]');
    first?.scrollIntoView({ block: 'center' });
    first?.focus();
  }, [shown]);
  const show = (fields: Record<string, string>, g: string | null) => {
    setErrors(fields);
    setGeneral(g);
    setShown((n) => n + 1);
  };
  const submit: Form['submit'] = async (call, check) => {
    const found = check?.() ?? {};
    if (Object.keys(found).length > 0) return void show(found, null);
    setBusy(true);
    try {
      const r = await call().catch(() => ({ data: undefined, error: { message: 'The service could not be reached.' } }));
      if (r.data !== undefined) {
        show({}, null);
        return r.data;
      }
      const mapped = mapErrors(r.error, labels, aliases);
      const on = placed[(r.error as { message?: string } | undefined)?.message ?? ''];
      if (on && Object.keys(mapped.fields).length === 0) show({ [on[0]]: on[1] }, null);
      else show(mapped.fields, mapped.general);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return {
    ref,
    errors,
    general,
    busy,
    control: (name) => ({
      id: `${prefix}-${name}`,
      name,
      'aria-invalid': errors[name] !== undefined,
      ...(errors[name] !== undefined ? { 'aria-describedby': `${prefix}-${name}-error` } : {}),
    }),
    label: (name) => labels[name] ?? name,
    submit,
    clear: () => {
      setErrors({});
      setGeneral(null);
    },
    changed: (name) => {
      if (errors[name] === undefined) return;
      const { [name]: _gone, ...rest } = errors;
      setErrors(rest);
    },
  };
}

/** A field: its label, its control (`children` given the control's attributes), a hint, and its error next to it. */
export function Field({
  form,
  name,
  hint,
  children,
}: {
  form: Form;
  name: string;
  hint?: string;
  children: (props: ControlProps) => ComponentChildren;
}) {
  const own = form.control(name);
  const error = form.errors[name];
  const described = [hint ? `${own.id}-hint` : '', error ? `${own.id}-error` : ''].filter(Boolean).join(' ');
  const props = { ...own, 'aria-describedby': described || undefined };
  return (
    <div class={`field${error ? ' invalid' : ''}`} onInput={() => form.changed(name)} onChange={() => form.changed(name)}>
      <label for={props.id}>{form.label(name)}</label>
      {hint && (
        <p class="hint" id={`${own.id}-hint`}>
          {hint}
        </p>
      )}
      {children(props)}
      {error && (
        <p class="field-error" id={`${own.id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

/** The form's submit button (disabled, with `busyText`, while the call is under way) and its general error. */
export function Submit({ form, text, busyText }: { form: Form; text: string; busyText: string }) {
  return (
    <>
      {form.general && (
        <p class="error" role="alert" tabIndex={-1}>
          {form.general}
        </p>
      )}
      <button type="submit" class="primary" disabled={form.busy}>
        {form.busy ? busyText : text}
      </button>
    </>
  );
}

/**
 * Whether a form opened by its button (`Opener`) is shown; once opened by the button its first
 * field is focused, so a keyboard or screen reader lands in the form it asked for.
 */
export function useOpen(form: Form, initially = false): [boolean, () => void, () => void] {
  const [open, setOpen] = useState(initially);
  const [asked, setAsked] = useState(0);
  useEffect(() => {
    if (asked > 0) form.ref.current?.querySelector<HTMLElement>('input:not([type=radio]):not([type=checkbox]), select, textarea')?.focus();
  }, [asked]);
  const show = () => {
    setOpen(true);
    setAsked((n) => n + 1);
  };
  return [open, show, () => setOpen(false)];
}

/** The button that opens a form (`New wallet`, `New charge`…), and what is said beside it. */
export function Opener({ text, onOpen, children }: { text: string; onOpen: () => void; children?: ComponentChildren }) {
  return (
    <div class="opener">
      <button type="button" aria-expanded="false" onClick={onOpen}>
        {text}
      </button>
      {children}
    </div>
  );
}

/** An input's value as the handler of `onInput` wants it. */
export const valueOf = (e: JSX.TargetedEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>): string => e.currentTarget.value;

/**
 * What is wrong with an EVM address typed by a merchant, in words; null when it is valid. A
 * mixed-case address must match its EIP-55 checksum: one wrong letter's case means a typo.
 */
export function addressProblem(value: string, label: string): string | null {
  const v = value.trim();
  if (v === '') return `${label} is required.`;
  if (!/^0x[0-9a-fA-F]{40}$/.test(v)) return `${label} must be 0x followed by 40 hexadecimal characters.`;
  const hex = v.slice(2);
  if (hex !== hex.toLowerCase() && hex !== hex.toUpperCase() && getAddress(v) !== v)
    return `${label} has a wrong checksum: the case of its letters does not match (a typo?). Copy the address again from its source.`;
  if (/^0x0{40}$/.test(v)) return `${label} cannot be the zero address.`;
  return null;
}

/** What is wrong with an amount typed by a merchant, in words; null when it is a number greater than 0. */
export function amountProblem(value: string, label: string): string | null {
  const v = value.trim();
  if (v === '') return `${label} is required.`;
  if (!/^\d+(?:\.\d+)?$/.test(v)) return `${label} must be a number, such as 12.5.`;
  return /[1-9]/.test(v) ? null : `${label} must be greater than 0.`;
}

/** Only the problems found: `{ address: '…' }` from `{ address: '…', amount: null }`. */
export function problems(found: Record<string, string | null>): Record<string, string> {
  return Object.fromEntries(Object.entries(found).filter((e): e is [string, string] => e[1] !== null));
}
