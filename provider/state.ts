// Process-wide state: one value per name for the whole process, kept on globalThis. Inside this
// repo Pulumi serializes provider code by value, so every function gets its own copy of a module
// variable: only globalThis is shared between them. Every value lives under one key,
// Symbol.for("@accessctl/pulumi/state/v<STATE_VERSION>"), made inside the function because Pulumi's
// closure serializer cannot serialize a captured symbol (and module scope holds no Set/Map/class
// instance for the same reason: see docs/design/plugin.md, "The dynamic host"). The version in the key changes with the
// shape of any value, so that another copy of this package in the process never reads a shape it does not know.
// Each module reads its own value through a typed accessor of its own (e.g. ownership.ts ownership()).

const STATE_VERSION = 1;

/** The process's value named `name`, made by `init` on first use. */
export function processState<T extends object>(name: string, init: () => T): T {
  const global = globalThis as unknown as Record<symbol, Record<string, object> | undefined>;
  const all = (global[Symbol.for(`@accessctl/pulumi/state/v${STATE_VERSION}`)] ??= {});
  return (all[name] ??= init()) as T;
}
