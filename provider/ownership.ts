// One owner per object. Within one provider process (one Pulumi run), no two resources may manage
// the same object, whichever way they came to it (created, adopted by id, taken over after a lost
// answer); and an existing object is taken over only when this process may have made it itself or
// the user said so (adoptId, or ACCESSCTL_ADOPT_EXISTING=1 for the run after an interrupted update).
// The records live on globalThis: module variables are not shared once Pulumi serializes the
// provider by value, and the symbol is made inside the functions (a captured one cannot be serialized).

import { plainError } from "./errors";
interface Ownership {
  /** "<kind> <id>" of every object a resource of this run has claimed. */
  claimed: string[];
  /** "<kind> <key>" of creates of this run whose answers were lost. */
  lostCreates: string[];
}

function ownership(): Ownership {
  const global = globalThis as unknown as Record<symbol, Ownership | undefined>;
  return (global[Symbol.for("@accessctl/pulumi/ownership")] ??= { claimed: [], lostCreates: [] });
}

/**
 * Records that a resource of this run manages `id`; fails if another one already does. Synchronous,
 * so two concurrent claims cannot both pass.
 */
export function claim(kind: string, id: string, what: string): void {
  const { claimed } = ownership();
  if (claimed.includes(`${kind} ${id}`)) {
    throw plainError(`${what}: ${kind} ${id} is already managed by another resource of this stack; declare it once`);
  }
  claimed.push(`${kind} ${id}`);
}

/** Whether a resource of this run manages `id` already. */
export function claimed(kind: string, id: string): boolean {
  return ownership().claimed.includes(`${kind} ${id}`);
}

/** A create of this run whose answer was lost: what it may have made can be taken over later in the run. */
export function noteLostCreate(kind: string, key: string): void {
  ownership().lostCreates.push(`${kind} ${key}`);
}

export function mayHaveCreated(kind: string, key: string): boolean {
  return ownership().lostCreates.includes(`${kind} ${key}`);
}

/** The explicit recovery switch for the run after an interrupted `pulumi up`. Read at call time. */
export function adoptExistingAllowed(): boolean {
  return process.env.ACCESSCTL_ADOPT_EXISTING === "1";
}
