// Where the API URL, key and request budget come from, and what to tell the user when a key is
// refused: stack config (`accessctl:apiUrl`, `accessctl:apiKey`, `accessctl:maxRequestsPerMinute`,
// `accessctl:profiles`), else the environment (ACCESSCTL_*; envVar names them all). Read when the
// provider runs, never at module load: a value held in a module variable at serialization time
// would be written into the state in plain text.
//
// Named account profiles: a resource with `profile: "staging"` talks to the account that profile
// names. Its URL and key come from the stack config `accessctl:profiles` (an object, set as a
// secret: `pulumi config set --secret --path accessctl:profiles.staging.apiKey …`) or from
// ACCESSCTL_STAGING_API_URL / ACCESSCTL_STAGING_API_KEY, like the default account's; the resource
// holds only the name, so credentials are never inputs or state. A profile never falls back to
// the default account's URL or key: a half-configured profile is an error, not the wrong account.

import { holdSecret } from "./http/redact";
import { unwrapSecrets } from "./secret-values";
import { watchEngine } from "./engine";
import { plainError, quietHostErrorLog } from "./errors";
import { processState } from "./state";
export interface Connection {
  apiUrl: string;
  /** The setting the URL came from, as the user named it: accessctl:apiUrl, ACCESSCTL_API_URL, or a profile's. */
  apiUrlSetting: string;
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

// The schema's config variables and provider inputs (scripts/schema.js), and what the plugin's Configure gets.
/**
 * The provider's configuration: the stack config `accessctl:<name>` (the default provider's), or the
 * inputs of a provider resource; each setting falls back to an environment variable.
 */
export interface ProviderConfig {
  /**
   * The API's base URL: `https://…`, or `http://` to a loopback
   * address only. Else the environment variable ACCESSCTL_API_URL.
   */
  apiUrl?: string;
  /**
   * The API key Pulumi calls the API with (a bearer token). Set it as a secret (`pulumi config set
   * --secret accessctl:apiKey`): one in plain text is refused. Else the environment variable ACCESSCTL_API_KEY.
   * @secret
   */
  apiKey?: string;
  /**
   * At most this many requests in any rolling 60 s, per account (the
   * service's limit). Default 120. Else ACCESSCTL_MAX_REQUESTS_PER_MINUTE.
   * @integer
   */
  maxRequestsPerMinute?: number;
  /**
   * Retries of one request after 429, 502, 503, 504 or a lost connection. Default 8. Else ACCESSCTL_MAX_RETRIES.
   * @integer
   */
  maxRetries?: number;
  /**
   * The pipeline's secret that signs a set's plan file (ACCESSCTL_PLAN_SAVE / ACCESSCTL_PLAN_HOLD): the
   * job that saves a plan for review and the job that deploys it hold the same. Set it as a secret
   * (`pulumi config set --secret accessctl:planKey`): one in plain text is refused. Else the
   * environment variable ACCESSCTL_PLAN_KEY; without either, a key derived from the API key. See
   * docs/guides/rule-sets.md.
   * @secret
   */
  planKey?: string;
  /**
   * The team's secret that signs the provider's ownership markers: the stacks that share an account and
   * leave each other's rules alone configure the same one (at least 16 characters). A marker that does
   * not verify with it proves nothing: an IpPolicyRuleSet treats its rule as drift. Set it as a secret
   * (`pulumi config set --secret accessctl:teamKey`): one in plain text is refused. Else the environment
   * variable ACCESSCTL_TEAM_KEY. See docs/design/ownership.md.
   * @secret
   */
  teamKey?: string;
  /**
   * Named accounts, for resources with `profile`: `{"staging": {"apiUrl": "…", "apiKey": "…"}}`
   * (`pulumi config set --secret --path accessctl:profiles.staging.apiKey
   * …`). Else ACCESSCTL_<PROFILE>_API_URL / _API_KEY.
   * @secret
   */
  profiles?: Record<string, AccountProfile>;
}

/**
 * One named account of `accessctl:profiles`: its settings, as
 * the default account's (never taken from the default account).
 */
export interface AccountProfile {
  /** The account's API base URL. Else ACCESSCTL_<PROFILE>_API_URL. */
  apiUrl?: string;
  /**
   * The account's API key. Else ACCESSCTL_<PROFILE>_API_KEY.
   * @secret
   */
  apiKey?: string;
  /**
   * At most this many requests in any rolling 60 s to this account. Else ACCESSCTL_<PROFILE>_MAX_REQUESTS_PER_MINUTE,
   * else ACCESSCTL_MAX_REQUESTS_PER_MINUTE; default 120.
   * @integer
   */
  maxRequestsPerMinute?: number;
}

export interface ConfigSource {
  /** Set for a named account profile: its URL and key never fall back to the default account's. */
  profile?: string;
  apiUrl?: string;
  apiKey?: string;
  maxRequestsPerMinute?: string;
  maxRetries?: string;
  /** The values above that came from the environment rather than the stack config (a profile's may). */
  fromEnv?: Key[];
}

type Key = "apiUrl" | "apiKey" | "maxRequestsPerMinute" | "maxRetries";

const DEFAULT_REQUESTS_PER_MINUTE = 120; // the service's per-account limit
const DEFAULT_RETRIES = 8;
const CONFIG_KEYS = ["apiUrl", "apiKey", "maxRequestsPerMinute", "maxRetries"] as const;

type Profiles = Record<string, Partial<Record<"apiUrl" | "apiKey" | "maxRequestsPerMinute", unknown>>>;
type Setting = "API_URL" | "API_KEY" | "MAX_REQUESTS_PER_MINUTE" | "MAX_RETRIES";
const SETTINGS: Record<Key, Setting> = {
  apiUrl: "API_URL",
  apiKey: "API_KEY",
  maxRequestsPerMinute: "MAX_REQUESTS_PER_MINUTE",
  maxRetries: "MAX_RETRIES",
};

// Filled by the dynamic provider's configure(). Empty in the program process, which never calls configure().
interface StackConfig {
  value?: ConfigSource;
  rejected?: string[];
  /** accessctl:planKey (a secret of the stack config): signs the plan file (saved-plan.ts). */
  planKey?: string;
  /** accessctl:teamKey (a secret of the stack config), read when the provider is configured. */
  teamKey?: string;
}

function stackConfigSlot(): StackConfig {
  return processState<StackConfig>("stack-config", () => ({}));
}

/**
 * The shortest team key or plan key taken: a shorter one is refused, naming the setting (its MACs could be guessed).
 */
export const TEAM_KEY_MIN_LENGTH = 16;

/** A signing secret long enough, or an error naming its setting. */
function longEnough(key: string, setting: string): void {
  if (key.length >= TEAM_KEY_MIN_LENGTH) return;
  const size = `at least ${TEAM_KEY_MIN_LENGTH} characters long (it has ${key.length})`;
  throw plainError(`${setting} must be ${size}: use a random secret, e.g. \`openssl rand -base64 32\``);
}

/**
 * The team key that signs and verifies ownership markers (ownership.ts): accessctl:teamKey, else
 * ACCESSCTL_TEAM_KEY; undefined: none (every marker is then a claim only). Read at call time.
 */
export function teamKeySetting(): { key: string; setting: string } | undefined {
  const fromConfig = stackConfigSlot().teamKey;
  const fromEnv = process.env.ACCESSCTL_TEAM_KEY;
  const found = fromConfig
    ? { key: fromConfig, setting: "accessctl:teamKey" }
    : fromEnv
      ? { key: fromEnv, setting: "ACCESSCTL_TEAM_KEY" }
      : undefined;
  if (!found) return undefined;
  holdSecret(found.key);
  longEnough(found.key, found.setting);
  return found;
}

// ---- a reviewed pipeline's plan file: each job says its role ------------------------------------
// Nothing else tells a `pulumi preview` from the preview of a `pulumi up`: the engine calls both
// alike (Check, Diff; the protocol's `preview` flag is on Create and Update only), so the job says.

export const PLAN_SAVE = "ACCESSCTL_PLAN_SAVE";
export const PLAN_HOLD = "ACCESSCTL_PLAN_HOLD";
export const PLAN_KEY = "ACCESSCTL_PLAN_KEY";

/**
 * A job's role in a reviewed pipeline: it saves the plan its preview shows to `path`, or holds a deploy to the
 * plan there.
 */
export interface PlanRole {
  role: "save" | "hold";
  path: string;
  /** The environment variable that says so. */
  setting: typeof PLAN_SAVE | typeof PLAN_HOLD;
}

const RETIRED_PLAN_FILE = (setting: string) =>
  `${setting} is no longer read: each job of a reviewed pipeline says its role. ` +
  `In the job that previews for review, set ${PLAN_SAVE}=<file> (\`pulumi preview\` writes the plan there); ` +
  `in the job that deploys, set ${PLAN_HOLD}=<the reviewed file> (\`pulumi up\` holds to it and never writes it). ` +
  `Both sign and check the file with ${PLAN_KEY} (or the secret config accessctl:planKey). See ` +
  `docs/guides/rule-sets.md`;

/**
 * This job's role (ACCESSCTL_PLAN_SAVE or ACCESSCTL_PLAN_HOLD), or
 * none. Throws for both, and for the retired ACCESSCTL_PLAN_FILE.
 */
export function planRole(): PlanRole | undefined {
  const env = process.env;
  if (env.ACCESSCTL_PLAN_FILE) throw plainError(`accessctl: ${RETIRED_PLAN_FILE("ACCESSCTL_PLAN_FILE")}`);
  const save = env[PLAN_SAVE];
  const hold = env[PLAN_HOLD];
  // Set but empty (a CI variable that expanded to nothing): no role would be taken silently, so a deploy
  // meant to hold to a reviewed plan would hold to none.
  for (const setting of [PLAN_SAVE, PLAN_HOLD]) {
    if (env[setting] === "")
      throw plainError(
        `accessctl: ${setting} is set but empty; nothing was changed. Set it to the plan file's path, or unset it`,
      );
  }
  if (save && hold) {
    throw plainError(
      `accessctl: ${PLAN_SAVE} and ${PLAN_HOLD} are both set: a job either saves a plan for review ` +
        `(${PLAN_SAVE}, with \`pulumi preview\`) or deploys holding to a reviewed one (${PLAN_HOLD}, with \`pulumi ` +
        `up\`); ` +
        "nothing was changed. Set one of them",
    );
  }
  if (save) return { role: "save", path: save, setting: PLAN_SAVE };
  return hold ? { role: "hold", path: hold, setting: PLAN_HOLD } : undefined;
}

/**
 * Refuses a write (create, update, delete of any resource) in a job that saves a plan for review:
 * its `pulumi up` never deploys, whatever it previewed.
 */
export function refuseWriteWhenSaving(): void {
  if (planRole()?.role !== "save") return;
  throw plainError(
    `accessctl: ${PLAN_SAVE} is set: this job saves a plan for review and writes nothing; nothing was changed. ` +
      `Run \`pulumi preview\` in it, and deploy in a job with ${PLAN_HOLD}=<the reviewed file> (\`pulumi up\`)`,
  );
}

/**
 * The secret a plan file is signed with: accessctl:planKey, else ACCESSCTL_PLAN_KEY, else the API key
 * of the default account (from which the file's keys are derived); `setting` names where it came from.
 */
export function planSecret(): { secret: string; setting: string; fromApiKey: boolean } {
  const fromConfig = stackConfigSlot().planKey;
  if (fromConfig) {
    longEnough(fromConfig, "accessctl:planKey");
    return { secret: fromConfig, setting: "accessctl:planKey", fromApiKey: false };
  }
  const fromEnv = process.env[PLAN_KEY];
  if (fromEnv) {
    holdSecret(fromEnv);
    longEnough(fromEnv, PLAN_KEY);
    return { secret: fromEnv, setting: PLAN_KEY, fromApiKey: false };
  }
  let conn: Connection;
  try {
    conn = connection();
  } catch (e) {
    throw plainError(
      `accessctl: no key to sign or check the plan file with: set ${PLAN_KEY} (or the secret config ` +
        `accessctl:planKey) in both jobs (${(e as Error).message})`,
    );
  }
  return { secret: conn.apiKey, setting: settingName("apiKey", conn.apiKeyFrom === "env"), fromApiKey: true };
}

/** Why a stack refuses to run when its plan key is kept in plain text. */
export function plainTextPlanKey(): string {
  return (
    "accessctl:planKey is stored in plain text in Pulumi.<stack>.yaml and in the state. Choose a new one and store " +
    "it " +
    "encrypted: `pulumi config set --secret accessctl:planKey <new key>` " +
    `(or pass it as ${PLAN_KEY} and \`pulumi config rm accessctl:planKey\`)`
  );
}

function profilesSlot(): { profiles?: Profiles } {
  return processState<{ profiles?: Profiles }>("profiles", () => ({}));
}

/**
 * The environment variable of a setting: ACCESSCTL_<SETTING>, or ACCESSCTL_<PROFILE>_<SETTING> (- as _) for a profile.
 */
export function envVar(setting: Setting, profile?: string): string {
  return `ACCESSCTL_${profile ? `${profile.toUpperCase().replace(/-/g, "_")}_` : ""}${setting}`;
}

/**
 * A setting as the user named it where they set it: `accessctl:apiUrl` or ACCESSCTL_API_URL, and for a
 * profile `accessctl:profiles.staging.apiUrl` or ACCESSCTL_STAGING_API_URL. Messages name this.
 */
export function settingName(key: Key, fromEnv: boolean, profile?: string): string {
  if (fromEnv) return envVar(SETTINGS[key], profile);
  return profile ? `accessctl:profiles.${profile}.${key}` : `accessctl:${key}`;
}

/** The `accessctl:*` settings read through `get`: one list of keys for the provider process and the program. */
export function configFrom(get: (key: string) => string | undefined): ConfigSource {
  const values: ConfigSource = {};
  for (const key of CONFIG_KEYS) values[key] = get(`accessctl:${key}`);
  return values;
}

/** The dynamic provider's configure hook: remember the stack config of this provider process, profiles included. */
export async function configure(req: { config: { get(key: string): unknown } }): Promise<void> {
  quietHostErrorLog(); // configure runs in the provider process only
  watchEngine();
  stackConfigSlot().value = configFrom((key) => req.config.get(key) as string | undefined);
  if (req.config.get("accessctl:planFile"))
    throw plainError(
      `accessctl: ${RETIRED_PLAN_FILE("accessctl:planFile")}; remove it: \`pulumi config rm accessctl:planFile\``,
    );
  const planKey = unwrapSecrets(req.config.get("accessctl:planKey"));
  stackConfigSlot().planKey = typeof planKey === "string" && planKey ? planKey : undefined;
  const teamKey = unwrapSecrets(req.config.get("accessctl:teamKey"));
  stackConfigSlot().teamKey = typeof teamKey === "string" && teamKey ? teamKey : undefined;
  holdSecret(stackConfigSlot().teamKey);
  let raw = unwrapSecrets(req.config.get("accessctl:profiles")); // (secrets inside structured config may come wrapped)
  if (typeof raw === "string") {
    try {
      raw = JSON.parse(raw);
    } catch {
      throw plainError('accessctl:profiles must be an object: {"staging": {"apiUrl": "…", "apiKey": "…"}}');
    }
  }
  profilesSlot().profiles = raw && typeof raw === "object" ? (raw as Profiles) : undefined;
  // Every key of the stack config is held as a secret of the process (http/redact.ts), used or not.
  holdSecret(stackConfigSlot().value?.apiKey);
  holdSecret(stackConfigSlot().planKey);
  for (const profile of Object.values(profilesSlot().profiles ?? {})) holdSecret(profile?.apiKey);
}

/** Where a resource's requests go: undefined for the default account, else the named profile's settings. */
export function profileSource(profile: unknown): ConfigSource | undefined {
  if (profile === undefined || profile === null || profile === "") return undefined;
  const name = String(profile);
  const fromConfig = profilesSlot().profiles?.[name] ?? {};
  const fromEnv: Key[] = [];
  const pick = (key: keyof Profiles[string]) => {
    const v = fromConfig[key];
    if (v !== undefined && v !== null && v !== "") return String(v);
    fromEnv.push(key);
    return process.env[envVar(SETTINGS[key], name)];
  };
  const source = {
    profile: name,
    apiUrl: pick("apiUrl"),
    apiKey: pick("apiKey"),
    maxRequestsPerMinute: pick("maxRequestsPerMinute"),
    fromEnv,
  };
  holdSecret(source.apiKey);
  if (!source.apiUrl)
    throw plainError(
      `accessctl: profile "${name}" has no API URL: set the stack config accessctl:profiles.${name}.apiUrl (pulumi ` +
        `config set --secret --path: all of accessctl:profiles is kept secret) or the environment variable ` +
        `${envVar("API_URL", name)}`,
    );
  if (!source.apiKey)
    throw plainError(
      `accessctl: profile "${name}" has no API key: set the stack config accessctl:profiles.${name}.apiKey (pulumi ` +
        `config set --secret --path) or the environment variable ${envVar("API_KEY", name)}`,
    );
  return source;
}

/**
 * The connection to use now: stack config first, then ACCESSCTL_* environment variables. A config
 * key the service refused in this process (see api()) gives way to ACCESSCTL_API_KEY.
 */
export function connection(source?: ConfigSource): Connection {
  const slot = stackConfigSlot();
  source = source ?? slot.value ?? {};
  const env = process.env;
  const apiUrl = source.apiUrl || (source.profile ? undefined : env[envVar("API_URL")]);
  const envKey = (!source.profile && env[envVar("API_KEY")]) || undefined;
  if (!apiUrl) {
    throw plainError(
      `accessctl: no API URL: set the stack config \`pulumi config set accessctl:apiUrl https://…\` or the ` +
        `environment variable ${envVar("API_URL")}`,
    );
  }
  if (!source.apiKey && !envKey) {
    throw plainError(
      `accessctl: no API key: set the stack config \`pulumi config set --secret accessctl:apiKey …\` or the ` +
        `environment variable ${envVar("API_KEY")}`,
    );
  }
  const named = (key: Key, value: unknown) =>
    settingName(key, !value || !!source.fromEnv?.includes(key), source.profile);
  const apiUrlSetting = named("apiUrl", source.apiUrl);
  checkApiUrl(apiUrl, apiUrlSetting);
  holdSecret(source.apiKey); // (the key of the program process, or a profile's, reaches redaction here)
  holdSecret(envKey);
  const other = source.apiKey && envKey && envKey !== source.apiKey ? envKey : undefined;
  const rejected = !!other && !!slot.rejected?.includes(source.apiKey!);
  return {
    apiUrl: apiUrl.replace(/\/+$/, ""),
    apiUrlSetting,
    apiKey: rejected ? envKey! : (source.apiKey || envKey)!,
    apiKeyFrom: source.apiKey && !rejected && !source.fromEnv?.includes("apiKey") ? "config" : "env",
    ...(source.profile ? { profile: source.profile } : {}),
    ...(rejected ? { rejected } : other ? { fallbackApiKey: other } : {}),
    maxRequestsPerMinute: wholeNumber(
      named("maxRequestsPerMinute", source.maxRequestsPerMinute),
      source.maxRequestsPerMinute || env[envVar("MAX_REQUESTS_PER_MINUTE")],
      DEFAULT_REQUESTS_PER_MINUTE,
      1,
    ),
    maxRetries: wholeNumber(
      named("maxRetries", source.maxRetries),
      source.maxRetries || env[envVar("MAX_RETRIES")],
      DEFAULT_RETRIES,
      0,
    ),
  };
}

/**
 * The service refused the config key (401) and there is another in ACCESSCTL_API_KEY: remember the
 * refusal for this process (never written anywhere) and go on with the environment's key. The state
 * holds the config of the last update, so a rotated key lives on in it.
 */
export function refuseConfigKey(conn: Connection): Connection {
  const slot = stackConfigSlot();
  (slot.rejected ??= []).push(conn.apiKey);
  return { ...conn, apiKey: conn.fallbackApiKey!, apiKeyFrom: "env", fallbackApiKey: undefined, rejected: true };
}

/** What to do about a refused API key, by where it came from. */
export function authHint(conn: Connection): string {
  if (conn.profile) {
    return (
      `the API key of profile "${conn.profile}" (${settingName("apiKey", conn.apiKeyFrom === "env", conn.profile)}) ` +
      `was refused: set it to a live API key of that account; ` +
      "after rotating a key kept in stack config, run `pulumi up` or `pulumi refresh --run-program` first (refresh " +
      "uses the config saved in the state)"
    );
  }
  if (conn.rejected)
    return (
      "neither accessctl:apiKey (as saved in the state) nor ACCESSCTL_API_KEY was accepted: set " +
      "ACCESSCTL_API_KEY to a live API key of this account"
    );
  if (conn.apiKeyFrom === "env")
    return "the API key in ACCESSCTL_API_KEY was refused: set it to a live API key of this account";
  return (
    "the API key in accessctl:apiKey was refused. `pulumi refresh` and `--refresh` use the key saved in the state by " +
    "the last update, " +
    "not the one in Pulumi.<stack>.yaml: if you have set the new key there, add --run-program (`pulumi refresh " +
    "--run-program`, " +
    "`pulumi up --refresh --run-program`) so that it is used and saved, or run `pulumi up` without --refresh first, " +
    "or set ACCESSCTL_API_KEY to the new key"
  );
}

/**
 * Why the word of ACCESSCTL_API_KEY, used after the config key was
 * refused, is not taken yet (a 404 it read, a create through it).
 */
export function unprovenFallback(doing: "read" | "create"): { why: string; hint: string } {
  return {
    why:
      "accessctl:apiKey was refused and ACCESSCTL_API_KEY, used instead, has not read any object of this stack, " +
      "so it may belong to another account",
    hint:
      doing === "read"
        ? "set ACCESSCTL_API_KEY to a key of the account that holds this stack's objects, or set accessctl:apiKey to " +
          "one and run `pulumi up` (or add --run-program)"
        : "set accessctl:apiKey to a live key of the stack's account (`pulumi config set --secret accessctl:apiKey " +
          "…`), or ACCESSCTL_API_KEY to one, and run `pulumi up` again",
  };
}

/** Why a stack refuses to run when its team key is kept in plain text (as plainTextKey for the API key). */
export function plainTextTeamKey(): string {
  return (
    "accessctl:teamKey is stored in plain text in Pulumi.<stack>.yaml and in the state. " +
    "Choose a new team key for every stack that shares it, then store it encrypted: " +
    "`pulumi config set --secret accessctl:teamKey <new key>` " +
    "(or pass it as ACCESSCTL_TEAM_KEY and `pulumi config rm accessctl:teamKey`)"
  );
}

/**
 * Why a stack refuses to run when its API key is kept in plain text (the
 * program's check for the dynamic classes, Configure for the plugin).
 */
export function plainTextKey(setting: "accessctl:apiKey" | "accessctl:profiles" = "accessctl:apiKey"): string {
  const keep =
    setting === "accessctl:apiKey"
      ? `\`pulumi config set --secret accessctl:apiKey <new key>\` (or pass it as ${envVar("API_KEY")} and \`pulumi ` +
        `config rm accessctl:apiKey\`)`
      : `\`pulumi config set --secret --path accessctl:profiles.<profile>.apiKey <new key>\` (or pass it as ` +
        `ACCESSCTL_<PROFILE>_API_KEY and remove it from accessctl:profiles)`;
  return (
    `${setting} ${setting === "accessctl:apiKey" ? "is" : "holds an API key"} stored in plain text in ` +
    `Pulumi.<stack>.yaml and in the state. Rotate that key, then store the new one encrypted: ${keep}`
  );
}

/** Whether accessctl:profiles (an object, or the JSON text of one) holds an API key of its own. */
export function profilesHoldKey(profiles: unknown): boolean {
  let value = profiles;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return false; // refused as it is when the provider is configured
    }
  }
  return (
    !!value &&
    typeof value === "object" &&
    Object.values(value).some((p) => !!p && typeof p === "object" && (p as { apiKey?: unknown }).apiKey !== undefined)
  );
}

/**
 * What the plugin's CheckConfig refuses before any request, by setting: a URL that is not https
 * (or http to loopback), with credentials, or not a URL; limits that are not whole numbers. A value
 * left out may come from the environment when a request is made: that is checked then.
 */
export function configProblems(values: Record<string, unknown>): { property: string; reason: string }[] {
  const problems: { property: string; reason: string }[] = [];
  const check = (property: string, run: () => void) => {
    try {
      run();
    } catch (e) {
      problems.push({ property, reason: (e as Error).message });
    }
  };
  if (typeof values.apiUrl === "string" && values.apiUrl) check("apiUrl", () => checkApiUrl(values.apiUrl as string));
  for (const [key, min] of [
    ["maxRequestsPerMinute", 1],
    ["maxRetries", 0],
  ] as const) {
    if (values[key] !== undefined && values[key] !== "")
      check(key, () => wholeNumber(`accessctl:${key}`, String(values[key]), 0, min));
  }
  return problems;
}

/** What to check when the service does not answer: whether it runs, and the URL, named where the user set it. */
export function urlHint(conn: Pick<Connection, "apiUrlSetting">): string {
  return `is the service up, and is ${conn.apiUrlSetting} right?`;
}

function wholeNumber(setting: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw plainError(`${setting} must be a whole number of at least ${min}, got ${JSON.stringify(value)}`);
  return n;
}

/**
 * https anywhere; plain http only to this machine, so that a key
 * never crosses a network in clear. `setting`: where the URL was set.
 */
export function checkApiUrl(apiUrl: string, setting = "accessctl:apiUrl"): void {
  let url: URL;
  try {
    url = new URL(apiUrl);
  } catch {
    throw plainError(`${setting} is not a URL: ${JSON.stringify(apiUrl)}`);
  }
  if (url.username || url.password)
    throw plainError(
      `${setting} must not carry credentials; set the API key as ` +
        `${setting.startsWith("ACCESSCTL_") ? setting.replace(/URL$/, "KEY") : setting.replace(/Url$/, "Key")}`,
    );
  if (url.protocol === "https:") return;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  if (url.protocol === "http:" && loopback) return;
  throw plainError(
    `${setting} must use https:// (plain http:// is allowed only to loopback addresses), got ${url.protocol}//` +
      `${url.host}`,
  );
}
