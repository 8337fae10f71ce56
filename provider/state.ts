// Process-wide state: one value per name for the whole process, kept on globalThis. Inside this
// repo Pulumi serializes provider code by value, so every function gets its own copy of a module
// variable: only globalThis is shared between them. The key is Symbol.for("@accessctl/pulumi/<name>"),
// made inside the function because Pulumi's closure serializer cannot serialize a captured symbol
// (and module scope holds no Set/Map/class instance for the same reason: see README "Layout").

/** The process's value named `name`, made by `init` on first use. */
export function processState<T extends object>(name: string, init: () => T): T {
  const global = globalThis as unknown as Record<symbol, T | undefined>;
  return (global[Symbol.for(`@accessctl/pulumi/${name}`)] ??= init());
}
