// Where the API URL, key and request budget come from: stack config (`accessctl:apiUrl`,
// `accessctl:apiKey`, `accessctl:maxRequestsPerMinute`), else the environment. Read when the
// provider runs, never at module load: a value held in a module variable at serialization time
// would be written into the state in plain text.

import { plainError, quietHostErrorLog } from "./errors";
import { processState } from "./state";
export interface Connection {
  apiUrl: string;
  apiKey: string;
  /** Where apiKey came from: the stack config (or the caller) or ACCESSCTL_API_KEY. */
  apiKeyFrom: "config" | "env";
  /** The named account profile these settings are for (none: the default account). */
  profile?: string;
  /** ACCESSCTL_API_KEY when apiKey is another key from the config: tried once if apiKey is refused. */
  fallbackApiKey?: string;
  /** True once the config key was refused and the environment's is used instead. */
  rejected?: boolean;
  maxRequestsPerMinute: number;
  maxRetries: number;
}

export interface ConfigSource {
  /** Set for a named account profile: its URL and key never fall back to the default account's. */
  profile?: string;
  apiUrl?: string;
  apiKey?: string;
  maxRequestsPerMinute?: string;
  maxRetries?: string;
}

const DEFAULT_REQUESTS_PER_MINUTE = 120; // the service's per-account limit
const DEFAULT_RETRIES = 8;
const CONFIG_KEYS = ["apiUrl", "apiKey", "maxRequestsPerMinute", "maxRetries"] as const;

// Filled by the dynamic provider's configure(). Empty in the program process, which never calls configure().
function stackConfigSlot(): { value?: ConfigSource; rejected?: string[] } {
  return processState<{ value?: ConfigSource; rejected?: string[] }>("stack-config", () => ({}));
}

/** The `accessctl:*` settings read through `get`: one list of keys for the provider process and the program. */
export function configFrom(get: (key: string) => string | undefined): ConfigSource {
  const values: ConfigSource = {};
  for (const key of CONFIG_KEYS) values[key] = get(`accessctl:${key}`);
  return values;
}

/** The dynamic provider's configure hook: remember the stack config of this provider process. */
export async function configure(req: { config: { get(key: string): string | undefined } }): Promise<void> {
  quietHostErrorLog(); // configure runs in the provider process only
  stackConfigSlot().value = configFrom((key) => req.config.get(key));
}

/**
 * The connection to use now: stack config first, then ACCESSCTL_* environment variables. A config
 * key the service refused in this process (see api()) gives way to ACCESSCTL_API_KEY.
 */
export function connection(source?: ConfigSource): Connection {
  const slot = stackConfigSlot();
  source = source ?? slot.value ?? {};
  const env = process.env;
  const apiUrl = source.apiUrl || (source.profile ? undefined : env.ACCESSCTL_API_URL);
  const envKey = (!source.profile && env.ACCESSCTL_API_KEY) || undefined;
  if (!apiUrl) {
    throw plainError("accessctl: no API URL: set the stack config `pulumi config set accessctl:apiUrl https://…` or the environment variable ACCESSCTL_API_URL");
  }
  if (!source.apiKey && !envKey) {
    throw plainError("accessctl: no API key: set the stack config `pulumi config set --secret accessctl:apiKey …` or the environment variable ACCESSCTL_API_KEY");
  }
  checkApiUrl(apiUrl);
  const other = source.apiKey && envKey && envKey !== source.apiKey ? envKey : undefined;
  const rejected = !!other && !!slot.rejected?.includes(source.apiKey!);
  return {
    apiUrl: apiUrl.replace(/\/+$/, ""),
    apiKey: rejected ? envKey! : (source.apiKey || envKey)!,
    apiKeyFrom: source.apiKey && !rejected ? "config" : "env",
    ...(source.profile ? { profile: source.profile } : {}),
    ...(rejected ? { rejected } : other ? { fallbackApiKey: other } : {}),
    maxRequestsPerMinute: wholeNumber("maxRequestsPerMinute", source.maxRequestsPerMinute || env.ACCESSCTL_MAX_REQUESTS_PER_MINUTE, DEFAULT_REQUESTS_PER_MINUTE, 1),
    maxRetries: wholeNumber("maxRetries", source.maxRetries || env.ACCESSCTL_MAX_RETRIES, DEFAULT_RETRIES, 0),
  };
}

/** Remembers, for this process, that the service refused this key (never written anywhere). */
export function rejectApiKey(apiKey: string): void {
  const slot = stackConfigSlot();
  (slot.rejected ??= []).push(apiKey);
}

function wholeNumber(key: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw plainError(`accessctl:${key} must be a whole number of at least ${min}, got ${JSON.stringify(value)}`);
  return n;
}

/** https anywhere; plain http only to this machine, so that a key never crosses a network in clear. */
export function checkApiUrl(apiUrl: string): void {
  let url: URL;
  try {
    url = new URL(apiUrl);
  } catch {
    throw plainError(`accessctl:apiUrl is not a URL: ${JSON.stringify(apiUrl)}`);
  }
  if (url.username || url.password) throw plainError("accessctl:apiUrl must not carry credentials; use accessctl:apiKey");
  if (url.protocol === "https:") return;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  if (url.protocol === "http:" && loopback) return;
  throw plainError(`accessctl:apiUrl must use https:// (plain http:// is allowed only to loopback addresses), got ${url.protocol}//${url.host}`);
}
