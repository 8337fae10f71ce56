// How Pulumi marks a secret inside structured values (config, and a plugin's gRPC Structs): an
// object with this signature key and value, the secret in `value`. The engine and SDKs use the same.
export const SECRET_SIG = "4dabf18193072939515e22adb298388d";
export const SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270";

export function isSecretValue(value: unknown): value is { value: unknown } {
  return value !== null && typeof value === "object" && (value as Record<string, unknown>)[SECRET_SIG] === SECRET_VALUE;
}

/** The values, every secret marker taken out (at any depth). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a config value, of the type its caller checks
export function unwrapSecrets(value: unknown): any {
  if (isSecretValue(value)) return unwrapSecrets(value.value);
  if (Array.isArray(value)) return value.map(unwrapSecrets);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, unwrapSecrets(v)]));
  return value;
}
