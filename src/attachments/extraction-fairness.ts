import { ConcurrencyGate } from '../limits/concurrency-gate';

/** The first wait of a job that stepped aside; each further one doubles it, up to DEFERRAL_MAX_MS. */
export const DEFERRAL_FIRST_MS = 1000;
export const DEFERRAL_MAX_MS = 30_000;

/**
 * Fairness between orgs in one worker process (docs/attachments.md, "Fairness between orgs"): one
 * org's files may hold at most `orgMaxThreads` of the process's extraction threads at once. A job
 * of an org that holds its share steps aside (it is queued again, delayed, and the next job in the
 * queue is taken), so a thread stays free for the other orgs' files.
 *
 * Counted in this process's memory only: every worker process applies the rule to its own
 * threads, and a process that dies takes its counts with it (none can stay taken).
 *
 * It also remembers which of an org's attachments stepped aside here, oldest first, so that when
 * the org's slot is given back the next one can be woken at once rather than at the end of its delay.
 */
export class ExtractionFairness {
  private readonly slots: ConcurrencyGate;
  private readonly waiting = new Map<string, Set<string>>();

  constructor(readonly orgMaxThreads: number) {
    this.slots = new ConcurrencyGate(orgMaxThreads);
  }

  /** Takes one of `orgId`'s slots for this attachment; false when the org holds all it may. */
  tryTake(orgId: string, attachmentId: string): boolean {
    if (this.slots.tryTake(orgId, 1) === 0) {
      const waiting = this.waiting.get(orgId) ?? new Set<string>();
      waiting.add(attachmentId);
      this.waiting.set(orgId, waiting);
      return false;
    }
    this.forget(orgId, attachmentId);
    return true;
  }

  /** Gives one of `orgId`'s slots back; answers the attachments of the org that stepped aside here, oldest first, to wake. */
  release(orgId: string): string[] {
    this.slots.give(orgId, 1);
    return [...(this.waiting.get(orgId) ?? [])];
  }

  /** The attachment no longer waits here (it was woken, or found done). */
  forget(orgId: string, attachmentId: string): void {
    const waiting = this.waiting.get(orgId);
    if (!waiting) return;
    waiting.delete(attachmentId);
    if (waiting.size === 0) this.waiting.delete(orgId);
  }

  /** Slots `orgId` holds in this process now. */
  heldBy(orgId: string): number {
    return this.slots.heldBy(orgId);
  }
}

/** How long a job waits after stepping aside `deferrals` times before (0: the first time): 1 s, 2 s, 4 s … at most 30 s. */
export function deferralDelayMs(deferrals: number): number {
  return Math.min(DEFERRAL_MAX_MS, DEFERRAL_FIRST_MS * 2 ** Math.min(deferrals, 16));
}
