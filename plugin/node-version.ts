// The launcher runs whatever `node` is first on PATH; the plugin is built and tested for Node.js 22 and later.

/** Why this Node.js cannot run the plugin, or undefined. */
export function nodeProblem(running: string): string | undefined {
  const major = Number(running.replace(/^v/, "").split(".")[0]);
  return major >= 22 ? undefined : `needs Node.js 22 or later; the node first on PATH is ${running}`;
}
