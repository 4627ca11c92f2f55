/**
 * What each fault proxy did with each signed transaction it was handed, so that the run can
 * count the combinations that matter between endpoints: one endpoint refusing a transaction
 * (without forwarding it) while another forwarded it and never gave an answer (a hang, a 502, a
 * reset or a glitch after forwarding). Only then can a service that takes the refusal as final
 * be wrong about a transaction the node holds and may mine.
 */
import { keccak256, type Hex } from 'viem';

/**
 * - `answered`: forwarded, the node's answer passed on (an acceptance, or the node's own refusal);
 * - `refused`: answered a definite refusal by the proxy, not forwarded;
 * - `unanswered`: forwarded, then no usable answer (reset, hang, 502, a glitch after forwarding);
 * - `lost`: not forwarded and no answer about it (502, 429, -32005, a time-out, a glitch).
 */
export type SendOutcome = 'answered' | 'refused' | 'unanswered' | 'lost';

/** A broadcast round: the calls about one transaction that came within ROUND_GAP_MS of each other. */
const ROUND_GAP_MS = 3_000;

export class SendLedger {
  private readonly seen = new Map<string, Array<{ at: number; proxy: number; outcome: SendOutcome }>>();

  /** The hash of a signed transaction's bytes (what the node would name it), or null when it is not hex. */
  static hashOf(raw: unknown): string | null {
    return typeof raw === 'string' && /^0x[0-9a-f]*$/i.test(raw) ? keccak256(raw as Hex).toLowerCase() : null;
  }

  record(raw: unknown, proxy: number, outcome: SendOutcome): void {
    const h = SendLedger.hashOf(raw);
    if (!h) return;
    const l = this.seen.get(h) ?? [];
    l.push({ at: Date.now(), proxy, outcome });
    this.seen.set(h, l);
  }

  /**
   * Rounds in which one endpoint refused while another forwarded without answering
   * (`refusedWhileForwarded`), and of those, rounds in which no endpoint answered at all
   * (`refusedNoneAnswered`: the refusal was the only answer the service got).
   */
  combinations(): { refusedWhileForwarded: number; refusedNoneAnswered: number } {
    let refusedWhileForwarded = 0;
    let refusedNoneAnswered = 0;
    for (const events of this.seen.values()) {
      for (const round of rounds(events)) {
        const refusedBy = new Set(round.filter((e) => e.outcome === 'refused').map((e) => e.proxy));
        if (refusedBy.size === 0) continue;
        const forwardedBy = round.filter((e) => e.outcome === 'unanswered' && !refusedBy.has(e.proxy));
        if (forwardedBy.length === 0) continue;
        refusedWhileForwarded += 1;
        if (!round.some((e) => e.outcome === 'answered')) refusedNoneAnswered += 1;
      }
    }
    return { refusedWhileForwarded, refusedNoneAnswered };
  }
}

function rounds<T extends { at: number }>(events: T[]): T[][] {
  const out: T[][] = [];
  let last = -Infinity;
  for (const e of events) {
    if (e.at - last > ROUND_GAP_MS) out.push([]);
    out[out.length - 1]!.push(e);
    last = e.at;
  }
  return out;
}
