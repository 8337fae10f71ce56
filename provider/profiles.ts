// The `profile` input every resource has: its entry in the tables of fields, the check() that a
// request could be made for it, and the inputs kept in the outputs. Where a profile's URL and key
// come from is config.ts (profileSource).
import { connection, profileSource } from "./config";
import type { Props } from "./module";
import { isUnknown } from "./validate";

/** Profile names: letters, digits, - and _, so that each maps to one environment variable prefix. */
export const PROFILE_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,62}$/;

/**
 * check(): fails preview when no request could be made for the
 * resource's account (no URL or key, a bad URL). No network.
 */
export function checkConnection(news: { profile?: unknown }, failures: { property: string; reason: string }[]): void {
  if (isUnknown(news.profile)) return;
  try {
    connection(profileSource(news.profile));
  } catch (e) {
    failures.push({ property: news.profile ? "profile" : "", reason: (e as Error).message });
  }
}

/** The `profile` input of every resource. */
export interface ProfileInput {
  /**
   * The account profile this object belongs to (e.g. "staging"); its URL and key come from the stack
   * config `accessctl:profiles.<name>` or ACCESSCTL_<NAME>_API_URL/_API_KEY. Unset: the default account.
   * Changing it replaces the object.
   */
  profile?: string;
}

/**
 * The `profile` entry of every resource's table of fields: a name,
 * never a URL or a key; another account means another object.
 */
export const PROFILE_FIELD = {
  check: (p: unknown) =>
    p === "" || (typeof p === "string" && PROFILE_PATTERN.test(p))
      ? undefined
      : 'must be the name of an account profile (letters, digits, - and _), e.g. "staging"; its URL and key come ' +
        "from accessctl:profiles or ACCESSCTL_<PROFILE>_API_URL/_API_KEY",
  same: (a: unknown, b: unknown) => (a || "") === (b || ""),
  onChange: "replace",
} as const;

/**
 * Inputs echoed into the outputs, because diff, read and delete get only the outputs: adoptId,
 * takeOver, profile, triggers, the URN messages about the resource go to (__urn), and which inputs
 * the program made secret (__secrets: their old values are secret too).
 */
export function keptInputs(inputs: Props): {
  adoptId?: string;
  takeOver?: boolean;
  profile?: string;
  triggers?: unknown[];
  __urn?: string;
  __secrets?: string[];
} {
  return {
    ...(inputs.adoptId ? { adoptId: inputs.adoptId } : {}),
    ...(inputs.takeOver === true ? { takeOver: true } : {}),
    ...(inputs.profile ? { profile: inputs.profile } : {}),
    ...(inputs.triggers !== undefined ? { triggers: inputs.triggers } : {}),
    ...(typeof inputs.__urn === "string" ? { __urn: inputs.__urn } : {}),
    ...(Array.isArray(inputs.__secrets) && inputs.__secrets.length ? { __secrets: inputs.__secrets } : {}),
  };
}
