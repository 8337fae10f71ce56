// Named account profiles: a resource with `profile: "staging"` talks to the account that profile
// names. Its URL and key come from the stack config `accessctl:profiles` (an object, set as a
// secret: `pulumi config set --secret --path accessctl:profiles.staging.apiKey …`) or from
// ACCESSCTL_STAGING_API_URL / ACCESSCTL_STAGING_API_KEY, like the default account's; the resource
// holds only the name, so credentials are never inputs or state. A profile never falls back to
// the default account's URL or key: a half-configured profile is an error, not the wrong account.
import { ConfigSource, configure as configureDefault, connection } from "./config";
import { isUnknown } from "./validate";
import { processState } from "./state";

type Profiles = Record<string, Partial<Record<"apiUrl" | "apiKey" | "maxRequestsPerMinute", unknown>>>;

/** Profile names: letters, digits, - and _, so that each maps to one environment variable prefix. */
export const PROFILE_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,62}$/;

function slot(): { profiles?: Profiles } {
  return processState<{ profiles?: Profiles }>("profiles", () => ({}));
}

// Secrets inside structured config may reach the provider wrapped; take the values out.
function unwrap(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  const v = value as Record<string, unknown>;
  if (v["4dabf18193072939515e22adb298388d"] === "1b47061264138c4ac30d75fd1eb44270") return unwrap(v.value);
  if (Array.isArray(value)) return value.map(unwrap);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, unwrap(x)]));
}

/** The dynamic provider's configure hook: the default account's settings and the profiles. */
export async function configure(req: { config: { get(key: string): unknown } }): Promise<void> {
  await configureDefault(req as { config: { get(key: string): string | undefined } });
  let raw = unwrap(req.config.get("accessctl:profiles"));
  if (typeof raw === "string") {
    try {
      raw = JSON.parse(raw);
    } catch {
      throw new Error("accessctl:profiles must be an object: {\"staging\": {\"apiUrl\": \"…\", \"apiKey\": \"…\"}}");
    }
  }
  slot().profiles = raw && typeof raw === "object" ? (raw as Profiles) : undefined;
}

/** The environment variable of a profile's setting: ACCESSCTL_<NAME>_<SETTING>, with - as _. */
export function profileEnvVar(profile: string, setting: "API_URL" | "API_KEY" | "MAX_REQUESTS_PER_MINUTE"): string {
  return `ACCESSCTL_${profile.toUpperCase().replace(/-/g, "_")}_${setting}`;
}

/** Where a resource's requests go: undefined for the default account, else the named profile's settings. */
export function profileSource(profile: unknown): ConfigSource | undefined {
  if (profile === undefined || profile === null || profile === "") return undefined;
  const name = String(profile);
  const fromConfig = slot().profiles?.[name] ?? {};
  const pick = (key: keyof Profiles[string], setting: Parameters<typeof profileEnvVar>[1]) => {
    const v = fromConfig[key];
    return v === undefined || v === null || v === "" ? process.env[profileEnvVar(name, setting)] : String(v);
  };
  const source = { profile: name, apiUrl: pick("apiUrl", "API_URL"), apiKey: pick("apiKey", "API_KEY"), maxRequestsPerMinute: pick("maxRequestsPerMinute", "MAX_REQUESTS_PER_MINUTE") };
  if (!source.apiUrl) throw new Error(`accessctl: profile "${name}" has no API URL: set the stack config accessctl:profiles.${name}.apiUrl (pulumi config set --path) or the environment variable ${profileEnvVar(name, "API_URL")}`);
  if (!source.apiKey) throw new Error(`accessctl: profile "${name}" has no API key: set the stack config accessctl:profiles.${name}.apiKey (pulumi config set --secret --path) or the environment variable ${profileEnvVar(name, "API_KEY")}`);
  return source;
}

/** check(): fails preview when no request could be made for the resource's account (no URL or key, a bad URL). No network. */
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

/** The `profile` entry of every resource's table of fields: a name, never a URL or a key; another account means another object. */
export const PROFILE_FIELD = {
  check: (p: unknown) => (p === "" || (typeof p === "string" && PROFILE_PATTERN.test(p)) ? undefined : "must be the name of an account profile (letters, digits, - and _), e.g. \"staging\"; its URL and key come from accessctl:profiles or ACCESSCTL_<PROFILE>_API_URL/_API_KEY"),
  same: (a: unknown, b: unknown) => (a || "") === (b || ""),
  onChange: "replace",
} as const;

/** Inputs echoed into the outputs, because read and delete get only the outputs: adoptId, takeOver, profile. */
export function keptInputs(inputs: Record<string, any>): { adoptId?: string; takeOver?: boolean; profile?: string } {
  return { ...(inputs.adoptId ? { adoptId: inputs.adoptId } : {}), ...(inputs.takeOver === true ? { takeOver: true } : {}), ...(inputs.profile ? { profile: inputs.profile } : {}) };
}
