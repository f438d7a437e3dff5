import { TurnProvenance } from "./turn-provenance.js";

/**
 * What one turn remembers about its approvals from one tool call to the next (DESIGN.md → Security: "Approvals are
 * counted per turn, not per call"): the classes of action an owner denied — a repeat, whole or split into pieces,
 * is refused without asking again — and running tallies (the files the turn's patches set out to delete), so a mass
 * deletion split into small patches is judged, and asked about, as the whole. The turn engine makes one per turn; a
 * delegated turn and a spawned subagent share their caller's, since they do its work.
 */
export class TurnApprovals {
  /** Where the turn's content came from: the rule of two reads it at every call (src/security/untrusted.ts). */
  readonly provenance = new TurnProvenance();
  private readonly denied = new Set<string>();
  private readonly tallies = new Map<string, Set<string>>();
  private readonly approvedUpTo = new Map<string, number>();

  /** Remembers that an owner denied (or let time run out on) an approval of this class in this turn. */
  deny(actionClass: string): void {
    this.denied.add(actionClass);
  }

  /** True when an owner denied this class earlier in the turn. */
  isDenied(actionClass: string): boolean {
    return this.denied.has(actionClass);
  }

  /** What the turn counted so far under `kind` (e.g. the files its patches set out to delete), each item once. */
  tally(kind: string): readonly string[] {
    return [...(this.tallies.get(kind) ?? [])];
  }

  /** Adds to a tally; an item counted before (a retried patch) is not counted again. */
  count(kind: string, items: readonly string[]): void {
    const tally = this.tallies.get(kind) ?? new Set<string>();
    for (const item of items) tally.add(item);
    this.tallies.set(kind, tally);
  }

  /** How far an owner's approval in this turn covers the tally of `kind` (0 when nothing was approved). */
  approved(kind: string): number {
    return this.approvedUpTo.get(kind) ?? 0;
  }

  /** Records that an owner approved the tally of `kind` up to `size` items. */
  approve(kind: string, size: number): void {
    this.approvedUpTo.set(kind, Math.max(size, this.approved(kind)));
  }
}
