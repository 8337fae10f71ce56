// Whose object is this. Decided by proof, never by timing or by who ran first (docs/design/ownership.md):
// - Within one `pulumi` command, no two resources manage one object (claim, claimPolicy: every
//   provider process of the engine sees the others' claims through the run record).
// - Across stacks and runs, by what the provider wrote: a marker in an object's metadata (the stack,
//   the resource and the create attempt that made it; see Marker below). A lost create takes only
//   the object its own marker's attempt names; a set leaves a rule only when another stack's marker
//   on it verifies with the team key (signed onto that rule): any other marker is a claim, not proof.
// - Else only by the user's say-so: adoptId, takeOver, or ACCESSCTL_ADOPT_EXISTING=1 for one run.
// The records live on globalThis: module variables are not shared once Pulumi serializes the
// provider by value, and the symbol is made inside the functions (a captured one cannot be serialized).

import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { ConfigSource, connection, teamKeySetting } from "./config";
import { serverClock, timeResolution } from "./http/clock";
import { DEFAULT_OPERATION_BOUND_MS } from "./operation";
import { plainError, setMessage } from "./errors";
import { addRecord, engineRecords } from "./run-record";
import { processState } from "./state";
interface Ownership {
  /** "<kind> <id>" of objects whose resources diff found must be replaced. */
  replacing: string[];
  /** Principal (owner_id of keys it creates) of each API key this process called with, by identity(). */
  principals: Record<string, string>;
}

function ownership(): Ownership {
  return processState<Ownership>("ownership", () => ({ replacing: [], principals: {} }));
}

/**
 * Records that a resource of this run manages `id`; fails if another one already does. Synchronous,
 * so two concurrent claims in one process cannot both pass. Every provider process of the engine
 * sees the claim (run-record.ts): a host switch or a plugin upgrade runs two at once.
 */
export function claim(kind: string, id: string, what: string): void {
  if (claimed(kind, id)) {
    throw plainError(`${what}: ${kind} ${id} is already managed by another resource of this stack; declare it once`);
  }
  addRecord("claimed", `${kind} ${id}`);
}

/** Whether a resource of this run manages `id` already. */
export function claimed(kind: string, id: string): boolean {
  return engineRecords("claimed").includes(`${kind} ${id}`);
}

/**
 * A set of this run holds these rules in its state: a rule resource's delete leaves them to it (the
 * program moved them into the set, and an unchanged set writes nothing, so claims nothing).
 */
export function noteSetMembers(ids: string[]): void {
  if (ids.length) addRecord("set-members", ids.join(" "));
}

export function heldBySet(id: string): boolean {
  return engineRecords("set-members").some((v) => v.split(" ").includes(id));
}

/** A create whose answer may be lost: when it was sent and what it sent. */
export interface CreateAttempt {
  kind: string;
  /** When the request was sent, on this process's clock (Date.now()). */
  sentAt: number;
  /**
   * When its failure came back, on this process's clock: what was made
   * after that, it did not make (as far as the service's answer tells).
   */
  failedAt?: number;
  /**
   * Every field sent, in the form the service shows it (canonical); undefined: not known (e.g. the caller's principal).
   */
  sent: Record<string, string | undefined>;
}

/** An existing object, in the same terms as CreateAttempt.sent. */
export interface Candidate {
  id: string;
  createdAt: string;
  fields: Record<string, string>;
}

/**
 * Why `attempt` cannot be proven to have made `found`, or undefined when it is: it must have been
 * created at or after the moment the request was sent on the service's clock, which is at most
 * `sentAt + upperOffsetMs` (ClockBounds.upper in ./http/clock: learnt from the service's answers; a
 * service whose times are whole seconds gives a coarse bound, and then a quick lost answer cannot
 * be proven); have every field sent; and not be managed by another resource of this run. Whatever
 * cannot be proven (an unknown clock or field) is a reason.
 */
export function whyNotMadeBy(
  attempt: CreateAttempt,
  found: Candidate,
  upperOffsetMs: number | undefined,
  lowerOffsetMs?: number,
): string | undefined {
  if (claimed(attempt.kind, found.id)) return "another resource of this stack manages it";
  if (upperOffsetMs === undefined)
    return "the service's clock is unknown (its answers have no Date header), so its creation time proves nothing";
  const since = attempt.sentAt + upperOffsetMs;
  const created = Date.parse(found.createdAt);
  if (!Number.isFinite(created)) return `its created_at ${JSON.stringify(found.createdAt)} is not a time`;
  if (created < since)
    return (
      `it was created at ${found.createdAt}, not provably after this create was sent (at the latest ` +
      `${new Date(since).toISOString()} on the service's clock)`
    );
  // And before the failure came back (at the earliest, on the service's clock): an identical object
  // another stack made after that is theirs.
  if (attempt.failedAt !== undefined) {
    if (lowerOffsetMs === undefined)
      return "the service's clock is unknown, so nothing proves it was created before this create's failure came back";
    const until = attempt.failedAt + lowerOffsetMs;
    // A time shown in whole seconds (or tenths…) may be up to that much behind the moment it names.
    if (created + timeResolution(found.createdAt) - 1 > until)
      return (
        `it was created at ${found.createdAt}, after this create's failure came back (` +
        `${new Date(until).toISOString()} on the service's clock at the earliest)`
      );
  }
  for (const [field, value] of Object.entries(attempt.sent)) {
    if (value === undefined)
      return `its ${field} cannot be checked (${field} ${found.fields[field]} is not known to be the caller's)`;
    if (found.fields[field] !== value)
      return `its ${field} is ${JSON.stringify(found.fields[field])}, not ${JSON.stringify(value)}`;
  }
  return undefined;
}

/**
 * diff found that the resource holding `id` must be replaced: its replacement is a new object, even
 * when the program still says adoptId `id` (diff and the create that follows run in one process).
 */
export function noteReplacing(kind: string, id: string): void {
  ownership().replacing.push(`${kind} ${id}`);
}

export function replacing(kind: string, id: string): boolean {
  return ownership().replacing.includes(`${kind} ${id}`);
}

/**
 * Who calls the service with the API key of `source`: the owner_id of a key this process created
 * without ownerId (learnPrincipal), else undefined. Kept by a hash of the URL and key, never the key.
 */
export function callerPrincipal(source: ConfigSource | undefined): string | undefined {
  return ownership().principals[identity(source)];
}

export function learnPrincipal(source: ConfigSource | undefined, ownerId: string): void {
  ownership().principals[identity(source)] = ownerId;
}

function identity(source: ConfigSource | undefined): string {
  const { apiUrl, apiKey } = connection(source);
  return createHash("sha256").update(`${apiUrl}\n${apiKey}`).digest("hex");
}

/**
 * An error of a create (or update) that failed after the object came to exist: the engine records
 * `properties` as the object's outputs (a partial create). Pulumi's host adds neither `__provider`
 * (without it a later refresh or destroy fails with "code must be a string") nor `reasons` (the
 * only text the engine shows), so both are set here.
 */
export function objectExists(err: Error, id: string, properties: object, inputs: object): Error {
  const { __provider } = inputs as { __provider?: unknown };
  const provider = __provider === undefined ? {} : { __provider };
  return Object.assign(err, { id, properties: { ...properties, ...provider }, reasons: [err.message] });
}

/**
 * For the GET of an adopted object: a 404 says adoptId names nothing (deleted since, or a typo); say
 * how to get a new object instead of a bare 404.
 */
export function adoptGone(id: string, noun: string): (e: Error & { status?: number }) => never {
  return (e) => {
    if (e.status !== 404) throw e;
    throw setMessage(
      e,
      `${e.message}; adoptId "${id}" names no existing ${noun}: remove adoptId to let Pulumi create a new ${noun}`,
    );
  };
}

/** The explicit recovery switch for the run after an interrupted `pulumi up`. Read at call time. */
export function adoptExistingAllowed(): boolean {
  return process.env.ACCESSCTL_ADOPT_EXISTING === "1";
}

/**
 * A set owns every rule of its policy, so a rule resource on that policy (or a second set) would be
 * deleted by the set, or fight it, at every `up`. check() of each records what it manages, and the
 * second of two that clash fails, naming the other (by its name where the URN is known, else by the
 * rule's CIDR). Every provider process of the engine sees what the others checked (run-record.ts).
 * Returns the failure's reason, or undefined.
 */
export function claimPolicy(kind: "set" | "rule", label: string, ipPolicyId: string): string | undefined {
  const owners = (k: "set" | "rule") =>
    engineRecords(`policy-${k}s`)
      .filter((v) => v.startsWith(`${ipPolicyId}\t`))
      .map((v) => v.slice(ipPolicyId.length + 1));
  const set = owners("set").find((s) => s !== label);
  if (kind === "set" && set !== undefined) {
    return (
      `the ${set} also manages the rules of IP policy ${ipPolicyId}; a set owns every rule of its policy, so ` +
      `the two sets would delete each other's rules. Declare the rules in one set, or use another policy`
    );
  }
  const rule = owners("rule")[0];
  if (kind === "set" && rule !== undefined) {
    return (
      `the ${rule} also manages a rule of IP policy ${ipPolicyId}; a set owns every rule of its policy, so the ` +
      `set would delete that rule at every up. Declare the rule in the set's rules instead, or use another policy`
    );
  }
  if (kind === "rule" && set !== undefined) {
    return (
      `IP policy ${ipPolicyId} is owned by the ${set}, which would delete this rule at every up; declare it in ` +
      `the set's rules instead, or use another policy`
    );
  }
  // Only what passed: the resource that failed is not in the run.
  if (!owners(kind).includes(label)) addRecord(`policy-${kind}s`, `${ipPolicyId}\t${label}`);
  return undefined;
}

/** How a resource is named in messages: `IpPolicyRuleSet office` from its URN, else `what`. */
export function resourceLabel(urn: unknown, type: string, what: string): string {
  return typeof urn === "string" && urn.includes("::") ? `${type} ${urn.slice(urn.lastIndexOf("::") + 2)}` : what;
}

// ---- the marker: whose object this is, by what the provider wrote ----------------------------

/**
 * What the provider writes into an object's `metadata` when the program declares none (a rule of a
 * set or an IpPolicyRule, an API key): the stack and resource that made it, the create attempt, and,
 * with a team key (accessctl:teamKey / ACCESSCTL_TEAM_KEY), a MAC over those and the object it is on.
 * Other tools see it as the object's metadata:
 * `{"managed-by":"pulumi-accessctl","stack":"proj/dev","resource":"IpPolicyRuleSet::office","attempt":"…",`
 * `"at":"…","sig":"…"}` (once the create's answer names the rule's id, `idSig` in place of `at` and `sig`).
 * Anyone who can write metadata can write one: only a marker that verifies (markerVerifies) proves
 * whose a rule is; any other is a claim. The attempt (random, unknown until the create is sent)
 * proves one create's object whether signed or not. Pulumi never sees a marker: the outputs show an
 * unset metadata, so it makes no diff, and an import's program declares none. A program that declares
 * its own metadata gets no marker (and no proof).
 */
export interface Marker {
  /** `project/stack` of the resource that made it (from its URN); none outside an engine. */
  stack?: string;
  /** `Type::name` of that resource. */
  resource?: string;
  /** This create's attempt: random, one per request. */
  attempt: string;
  /**
   * When `sig` was made, on the service's clock as its maker knew it (RFC 3339), signed with it: the
   * grace of an id-less marker runs from it, so a copy onto a rule made later is never pending.
   */
  at?: string;
  /** The MAC (markerMac), base64url; none: written without a team key (or an API key's: see newMarker). */
  sig?: string;
  /** The MAC that also covers the rule's id (markerIdMac), written once the create's answer names it; then no `sig`. */
  idSig?: string;
}

/**
 * What a marker is signed onto: the fields of the object that a copy of the marker could be put on.
 * A rule's: its policy, canonical CIDR and action (ruleIdentity), so a marker copied onto another
 * rule, or a rule moved or flipped, no longer verifies.
 */
export type MarkedObject = readonly string[];

const MANAGED_BY = "pulumi-accessctl";
/** Longest stack or resource name a marker keeps (URN parts can be long): far within metadata's 4096 bytes. */
export const MARKER_NAME_MAX = 1024;
const SIG_BYTES = 16; // 128 bits of HMAC-SHA256

/** The object a marker on a rule is signed onto. `cidr`: canonical (ip-policy-rule.ts canonicalCidr). */
export function ruleIdentity(ipPolicyId: string, cidr: string, action: string): MarkedObject {
  return ["ip-policy-rule", ipPolicyId, cidr, action];
}

/**
 * Who a resource is, from its URN (`urn:pulumi:<stack>::<project>::<parent$type>::<name>`): the same on either host.
 */
export function ownerOf(urn: unknown): Omit<Marker, "attempt"> {
  if (typeof urn !== "string" || !urn.startsWith("urn:pulumi:")) return {};
  const [stack, project, type, ...name] = urn.slice("urn:pulumi:".length).split("::");
  const short = (type ?? "").split("$").pop()!.split(":").pop()!.split("/").pop();
  return { stack: `${project}/${stack}`, resource: `${short}::${name.join("::")}` };
}

/**
 * Pure: the MAC of a marker on an object: HMAC-SHA256 with the team key over the canonical JSON of
 * the marker's fields and the object's, truncated to 128 bits, base64url.
 */
export function markerMac(teamKey: string, m: Omit<Marker, "sig">, on: MarkedObject): string {
  // (with `at`, another domain: an earlier marker without it cannot be given one)
  const head = m.at === undefined ? ["accessctl-marker/v1"] : ["accessctl-marker/v1-at", m.at];
  const canonical = JSON.stringify([...head, m.stack ?? "", m.resource ?? "", m.attempt, ...on]);
  return createHmac("sha256", teamKey).update(canonical).digest().subarray(0, SIG_BYTES).toString("base64url");
}

/** Pure: whether a marker is signed with `teamKey` for the object `on` (no key, no signature: no). */
export function markerVerifies(teamKey: string | undefined, m: Marker, on: MarkedObject): boolean {
  if (!teamKey || typeof m.sig !== "string") return false;
  const want = Buffer.from(markerMac(teamKey, m, on));
  const have = Buffer.from(m.sig);
  return have.length === want.length && timingSafeEqual(have, want);
}

/**
 * Pure: the MAC of a marker bound to its rule's id as well (the second signature, written once the
 * create's answer names the id): a copy onto another rule, even an identical one made later, fails.
 */
export function markerIdMac(teamKey: string, m: Omit<Marker, "sig" | "idSig">, on: MarkedObject, id: string): string {
  const canonical = JSON.stringify(["accessctl-marker/v2-id", m.stack ?? "", m.resource ?? "", m.attempt, ...on, id]);
  return createHmac("sha256", teamKey).update(canonical).digest().subarray(0, SIG_BYTES).toString("base64url");
}

function sameMac(have: string, want: string): boolean {
  const a = Buffer.from(have);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * How long a marker signed without its rule's id (a stack between its create and the second
 * signature, see markerVerdict) is left alone after the rule's created_at: the default bound of one
 * operation (operation.ts), which a create and its second signature run within.
 */
export const ID_SIGNING_GRACE_MS = DEFAULT_OPERATION_BOUND_MS;

/** Why a marker proves nothing: the words are unverifiedWhy's. */
export type Unverified = "no-team-key" | "unsigned" | "bad-signature" | "other-rule" | "never-bound";

/** What a marker on a rule proves (markerVerdict). `until`: the end of the grace, on the service's clock (RFC 3339). */
export type MarkerVerdict =
  { kind: "verified" } | { kind: "pending"; until: string } | { kind: "unverified"; because: Unverified };

/** A rule as a verdict needs it: its id and the service's created_at. */
export interface RuleMade {
  id: string;
  createdAt: string;
}

/**
 * Pure: what the marker `m` on the rule `rule` (on `on`) proves, with `teamKey`, at `nowMs` on the
 * service's clock. Only a signature bound to the rule's id verifies. The id-less one (written at the
 * create, before the id is known) is a claim, left alone as pending for ID_SIGNING_GRACE_MS after the
 * rule was created or the signature made (its signed `at`), whichever is earlier, and after that proves
 * nothing: a copy kept and put on a rule made later (its created_at is the copier's) is never pending.
 * A marker with an id-bound signature, or an id-less one without `at`, is never pending.
 */
export function markerVerdict(
  teamKey: string | undefined,
  m: Marker,
  on: MarkedObject,
  rule: RuleMade,
  nowMs: number,
): MarkerVerdict {
  const unverified = (because: Unverified): MarkerVerdict => ({ kind: "unverified", because });
  if (!teamKey) return unverified("no-team-key");
  if (typeof m.idSig === "string") {
    return sameMac(m.idSig, markerIdMac(teamKey, m, on, rule.id)) ? { kind: "verified" } : unverified("other-rule");
  }
  if (typeof m.sig !== "string") return unverified("unsigned");
  if (!markerVerifies(teamKey, m, on)) return unverified("bad-signature");
  const signedAt = typeof m.at === "string" ? Date.parse(m.at) : NaN;
  const until = Math.min(Date.parse(rule.createdAt), signedAt) + ID_SIGNING_GRACE_MS;
  if (!Number.isFinite(until) || nowMs >= until) return unverified("never-bound");
  return { kind: "pending", until: new Date(until).toISOString() };
}

/** Now on the service's clock, at its latest as this process knows it (the grace ends no later than it should). */
export function serviceNow(source?: ConfigSource): number {
  return Date.now() + (serverClock(source).upper ?? 0);
}

/** What the marker on this rule proves, with the team key configured now. */
export function ruleMarkerVerdict(m: Marker, on: MarkedObject, rule: RuleMade, source?: ConfigSource): MarkerVerdict {
  return markerVerdict(teamKeySetting()?.key, m, on, rule, serviceNow(source));
}

/**
 * The marker a create's second write puts on its rule once the id is known: the same maker and
 * attempt, signed onto the rule and its id (and no id-less signature, which a copy could use for a
 * grace). Undefined without a team key: an unsigned marker has nothing to bind.
 */
export function idBoundMarker(m: Marker, on: MarkedObject, ruleId: string): Marker | undefined {
  const key = teamKeySetting()?.key;
  if (!key) return undefined;
  const { sig: _sig, idSig: _idSig, at: _at, ...fields } = m;
  return { ...fields, idSig: markerIdMac(key, fields, on, ruleId) };
}

/**
 * A new marker for one create request of the resource `urn`: signed onto `on` with the team key, if
 * one is configured. An API key's is not signed: nothing is decided by whose a key is, only by its
 * attempt (a lost create), and its owner is not known before it is made.
 */
export function newMarker(urn: unknown, on?: MarkedObject): Marker {
  const { stack, resource } = ownerOf(urn);
  const clip = (v: string | undefined) => v?.slice(0, MARKER_NAME_MAX);
  const named = { ...(stack ? { stack: clip(stack) } : {}), ...(resource ? { resource: clip(resource) } : {}) };
  const m: Marker = { ...named, attempt: randomBytes(8).toString("hex") };
  const key = on ? teamKeySetting()?.key : undefined;
  if (!key || !on) return m;
  const at = { ...m, at: new Date(serviceNow()).toISOString() };
  return { ...at, sig: markerMac(key, at, on) };
}

/** The metadata text of a marker. */
export function markerText(m: Marker): string {
  const named = { ...(m.stack ? { stack: m.stack } : {}), ...(m.resource ? { resource: m.resource } : {}) };
  const at = m.at ? { at: m.at } : {};
  const sigs = { ...at, ...(m.sig ? { sig: m.sig } : {}), ...(m.idSig ? { idSig: m.idSig } : {}) };
  return JSON.stringify({ "managed-by": MANAGED_BY, ...named, attempt: m.attempt, ...sigs });
}

/** The marker an object's metadata holds, or undefined (metadata of a program's, a hand's, or none). */
export function readMarker(metadata: unknown): Marker | undefined {
  if (typeof metadata !== "string" || !metadata.startsWith(`{"managed-by":"${MANAGED_BY}"`)) return undefined;
  try {
    const m = JSON.parse(metadata) as Record<string, unknown>;
    const str = (v: unknown) => (typeof v === "string" ? v : undefined);
    if (typeof m.attempt !== "string") return undefined;
    const sig = str(m.sig) ? { sig: str(m.sig) } : {};
    const idSig = str(m.idSig) ? { idSig: str(m.idSig) } : {};
    const at = str(m.at) ? { at: str(m.at) } : {};
    return { stack: str(m.stack), resource: str(m.resource), attempt: m.attempt, ...at, ...sig, ...idSig };
  } catch {
    return undefined;
  }
}

/** Metadata as Pulumi shows it: a marker is no metadata of the program's (""). */
export function visibleMetadata(metadata: unknown): string {
  return readMarker(metadata) ? "" : typeof metadata === "string" ? metadata : "";
}

/**
 * A create's or update's body, with the resource's marker where it would leave metadata unset (signed
 * onto `on`: see newMarker); the marker it wrote, if any.
 */
export function marked<B extends { metadata?: string }>(
  body: B,
  urn: unknown,
  update = false,
  on?: MarkedObject,
  ruleId?: string,
): { body: B; marker?: Marker } {
  if (update ? body.metadata !== "" : body.metadata) return { body };
  // An update knows the rule's id: its marker is bound to it at once (idBoundMarker).
  const made = newMarker(urn, on);
  const marker = (on && ruleId !== undefined ? idBoundMarker(made, on, ruleId) : undefined) ?? made;
  return { body: { ...body, metadata: markerText(marker) }, marker };
}

/**
 * Another stack's claim: the marker names a stack, and not `urn`'s. (No marker, or no stack to
 * compare: not known to be another's.) A claim proves nothing unless it verifies (ruleMarkerVerdict).
 */
export function othersMarker(marker: Marker | undefined, urn: unknown): Marker | undefined {
  const mine = ownerOf(urn).stack;
  return marker?.stack && mine && marker.stack !== mine ? marker : undefined;
}

/** How a marker names its maker in messages: `IpPolicyRuleSet office of stack proj/prod`. */
export function makerName(m: Marker): string {
  const [type, name] = (m.resource ?? "").split("::");
  return (
    `${m.resource ? `${shown(type)} ${shown(name ?? "")}` : "a resource"}` +
    `${m.stack ? ` of stack ${shown(m.stack)}` : ""}`
  );
}

/**
 * A name from a marker (anyone with console access writes one), as a reviewer may read it: no control,
 * format or bidi character (which could hide or fake lines of the output), at most 100 characters.
 */
function shown(text: string): string {
  const plain = text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, "?");
  return plain.length > 100 ? `${plain.slice(0, 99)}…` : plain;
}

/** Why a marker did not verify, in words. */
export function unverifiedWhy(because: Unverified): string {
  switch (because) {
    case "no-team-key":
      return "no team key is set (accessctl:teamKey or ACCESSCTL_TEAM_KEY)";
    case "unsigned":
      return "it is not signed";
    case "bad-signature":
      return "its signature does not match this rule and the team key";
    case "other-rule":
      return "its signature is bound to another rule";
    case "never-bound":
      return "it was signed before its rule id was known and never bound to it";
  }
}

/** An unverified claim in words: `claims IpPolicyRule partner of stack shop/b: not verified (it is not signed)`. */
export function claimText(m: Marker, because: Unverified): string {
  return `claims ${makerName(m)}: not verified (${unverifiedWhy(because)})`;
}

/**
 * A pending claim in words: `pending: signed by IpPolicyRule p
 * of stack shop/b before its id was known, left alone until …`
 */
export function pendingText(m: Marker, until: string): string {
  return `pending: signed by ${makerName(m)} before its id was known, left alone until ${until}`;
}
