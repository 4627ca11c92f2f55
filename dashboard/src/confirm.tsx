/**
 * The question asked before an action that moves money or cannot be undone (approve, reject,
 * refund, revoke): a modal <dialog> whose confirm button repeats the verb and the object
 * ("Approve 1.1 ETH to 2 recipients", "Revoke key ci-bot"), so what is clicked says what happens.
 * The browser's modal dialog keeps focus inside it and makes the page behind it inert; focus
 * starts on Cancel (the safe answer), Escape cancels, and focus returns to what opened it.
 *
 * A view uses it as `const confirm = useConfirm();` … `if (await confirm.ask({...})) act();` and
 * renders `{confirm.dialog}` once; `useDecision` does so for what is held for approval.
 */
import type { ComponentChildren, VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { failure } from './api.js';

export interface Question {
  /** The dialog's heading, a question ("Approve this payout?"). */
  title: string;
  /** The confirm button: the verb and the object ("Approve 1.1 ETH to 2 recipients"). */
  action: string;
  /** What the action does, in detail (recipients, amounts, what cannot be undone). */
  details?: ComponentChildren;
  /** A destructive action (reject, revoke, refund): its button is red. */
  danger?: boolean;
}

interface Open extends Question {
  answer: (yes: boolean) => void;
}

function ConfirmDialog({ open, onClose }: { open: Open; onClose: (yes: boolean) => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const opener = useRef<HTMLElement | null>(null);
  useEffect(() => {
    opener.current = document.activeElement as HTMLElement | null;
    ref.current?.showModal();
    cancel.current?.focus();
  }, []);
  // Closed before focus goes back: while the modal dialog is open the page behind it is inert.
  const finish = (yes: boolean) => {
    ref.current?.close();
    opener.current?.focus();
    onClose(yes);
  };
  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-details"
      onCancel={(e) => {
        // Escape: closed by this code, as by Cancel.
        e.preventDefault();
        finish(false);
      }}
    >
      <h2 id="confirm-title">{open.title}</h2>
      <div id="confirm-details">{open.details}</div>
      <div class="confirm-buttons">
        <button type="button" ref={cancel} onClick={() => finish(false)}>
          Cancel
        </button>
        <button type="button" class={open.danger ? 'danger' : 'go'} onClick={() => finish(true)}>
          {open.action}
        </button>
      </div>
    </dialog>
  );
}

/** `ask(question)` opens the dialog and resolves true on the confirm button, false on Cancel or Escape; render `dialog` in the view. */
export function useConfirm(): { ask: (q: Question) => Promise<boolean>; dialog: VNode | null } {
  const [open, setOpen] = useState<Open | null>(null);
  const ask = (q: Question) =>
    new Promise<boolean>((answer) => {
      setOpen({ ...q, answer });
    });
  const close = (yes: boolean) => {
    open?.answer(yes);
    setOpen(null);
  };
  return { ask, dialog: open ? <ConfirmDialog open={open} onClose={close} /> : null };
}

export type Decision = 'approve' | 'reject';

/**
 * Approve or reject what is held for approval (a transaction, a payout): asked in the dialog
 * (`action`: the button's words, `details`: what it sends where), then `send`; the answer in words
 * to `onDecided`. Render `dialog`.
 */
export function useDecision(
  noun: 'Transaction' | 'Payout',
  send: (id: number, kind: Decision) => Promise<{ data?: unknown; error?: unknown }>,
  onDecided: (m: { error: boolean; text: string }) => void,
) {
  const confirm = useConfirm();
  const decide = async (id: number, kind: Decision, action: string, details: ComponentChildren) => {
    const verb = kind === 'approve' ? 'Approve' : 'Reject';
    if (!(await confirm.ask({ title: `${verb} ${noun.toLowerCase()} ${id}?`, action, details, danger: kind === 'reject' }))) return;
    const r = await send(id, kind);
    const done = kind === 'approve' ? 'approved' : 'rejected';
    onDecided(
      r.data
        ? { error: false, text: `${noun} ${id} ${done}.` }
        : { error: true, text: failure(r.error, `The ${noun.toLowerCase()} could not be ${done}.`) },
    );
  };
  return { decide, dialog: confirm.dialog };
}
