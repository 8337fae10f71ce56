// Loads a compiled provider the way Pulumi does: serialize the provider module with Pulumi's own
// closure serializer, then load the text back with require-from-string, as the dynamic-provider
// plugin process does. Uses Node's require (not vitest's), so the module cache is the real one.
import { createRequire } from "node:module";
import * as path from "node:path";
import { REPO } from "./emulator";

const nodeRequire = createRequire(path.join(REPO, "package.json"));

export type ProviderName = "api-key" | "ip-policy-rule" | "ip-policy-rule-set" | "tls-edge-mutual-tls";

export interface LoadedProvider {
  text: string;
  provider: Record<string, (...args: any[]) => Promise<any>>;
}

export async function serializedProvider(name: ProviderName): Promise<LoadedProvider> {
  const pulumi = nodeRequire("@pulumi/pulumi");
  const module = nodeRequire(path.join(REPO, "dist/provider", `${name}.js`));
  const serialized = await pulumi.runtime.serializeFunction(() => module, { allowSecrets: true });
  const provider = nodeRequire("require-from-string")(serialized.text).handler();
  return { text: serialized.text, provider };
}

/** What the dynamic-provider plugin hands to configure(): the stack config, namespaced keys. */
export function configureRequest(values: Record<string, string>) {
  return { config: { get: (key: string) => values[key] } };
}

/** The compiled client module, loaded with Node's require (shares the process-wide client state). */
export function compiled<T = any>(file: string): T {
  return nodeRequire(path.join(REPO, "dist", file));
}

/**
 * A provider process serves one Pulumi run; tests run many in one process. Forget what a run
 * remembers of its resources (which resources manage which policy's rules, what they created,
 * claimed or hold), so that the next test starts as a new run does.
 */
export function newRun(): void {
  const all = (globalThis as unknown as Record<symbol, Record<string, unknown> | undefined>)[
    Symbol.for("@accessctl/pulumi/state/v1")
  ];
  if (all) for (const what of ["ownership", "run-record"]) delete all[what];
}
