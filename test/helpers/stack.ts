// Runs Pulumi operations on a stack of the e2e project through scripts/stack.js, in a child
// process: the real `pulumi` CLI on the project directory, whose language host runs the program
// with @pulumi/pulumi and our package from the project's node_modules, as for a user.
import { ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { inject } from "vitest";
import { RunningEmulator } from "./emulator";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { spawnJob } = require("../../scripts/stack.js");

export interface Spec {
  keys?: Record<string, Record<string, unknown>>;
  rules?: Record<string, Record<string, unknown>>;
  modules?: Record<string, Record<string, unknown>>;
  sets?: Record<string, Record<string, unknown>>;
  opts?: Record<string, Record<string, unknown>>;
  listPolicy?: string;
  idsOnly?: boolean;
  plugin?: boolean;
  secretTexts?: boolean;
  ruleIdOf?: string;
}

export interface RunResult {
  ok: boolean;
  error?: string;
  /** Everything Pulumi printed (its progress goes to stderr). */
  output: string;
  /** The CLI's exit code (operations that ran pulumi up/preview/refresh/destroy). */
  exitCode?: number;
  summary?: { result: string; resourceChanges?: Record<string, number> };
  changeSummary?: Record<string, number>;
  outputs?: Record<string, { value: any; secret: boolean }>;
  seconds: number;
}

export interface StackOptions {
  project: { dir: string; binDir: string; nodeDir?: string };
  emulator: RunningEmulator;
  name?: string;
  /** How the provider gets its credentials: stack config (default) or environment variables. */
  credentials?: "config" | "env";
  apiKey?: string;
  extraConfig?: Record<string, { value: string; secret?: boolean }>;
  /** A shared backend (e.g. postgres://…) instead of a file backend of this stack's own; state() and backendText() need a file backend. */
  backendUrl?: string;
  /** Environment for every operation of the stack (PULUMI_HOME with the plugin installed, say). */
  env?: Record<string, string>;
}

/**
 * A PULUMI_HOME of its own with the plugin installed from its tarball (scripts/pack-project.js, which
 * the benchmarks use too). The environment for stacks that use it.
 */
type PluginHome = (binDir: string, tarball: string) => { env: Record<string, string>; cleanup(): void };
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const pluginHome: PluginHome = require("../../scripts/pack-project.js").pluginHome;

/**
 * The e2e project (the package from `npm pack`) and a PULUMI_HOME with the plugin installed from the
 * package's tarball, as a user installs it; removed by the cleanup it pushes.
 */
export function packedPlugin(cleanups: (() => unknown)[]) {
  const project = inject("e2e");
  const home = pluginHome(
    project.binDir,
    path.join(project.dir, "node_modules/@accessctl/pulumi/dist/pulumi-resource-accessctl-v0.1.0-linux-amd64.tar.gz"),
  );
  cleanups.push(() => home.cleanup());
  return { project, home };
}

/** Every process below `pid` now (children, their children, …), from the ppid links in /proc/<pid>/stat. */
export function descendants(pid: number): number[] {
  const parentOf: Record<number, number> = {};
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      parentOf[Number(entry)] = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]); // after "pid (comm) state"
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const [child, ppid] of Object.entries(parentOf)) {
      if (ppid === parent && !found.includes(Number(child))) {
        found.push(Number(child));
        queue.push(Number(child));
      }
    }
  }
  return found;
}

/**
 * Ctrl-C of a job started with start(): "terminal" signals its whole process group (the runner and
 * pulumi, as a terminal signals its foreground job; Pulumi's plugins have groups of their own), "ci"
 * signals pulumi alone (what a CI's cancel does). Returns when it was sent (Date.now()).
 */
export function interrupt(child: ChildProcess, how: "terminal" | "ci"): number {
  if (how === "terminal") process.kill(-child.pid!, "SIGINT");
  else process.kill(descendants(child.pid!)[0], "SIGINT");
  return Date.now();
}

/** The writes the emulator answered with success (creates, updates, deletes): what runs did to the account. */
export async function writes(emu: RunningEmulator): Promise<number> {
  const m = (await emu.stats()).byMethod;
  return (m["POST 2xx"] ?? 0) + (m["PATCH 2xx"] ?? 0) + (m["PUT 2xx"] ?? 0) + (m["DELETE 2xx"] ?? 0);
}

/**
 * Ctrl-C (interrupt) of a running job once its writes wait in the rate limiter (30 or more made, none
 * for 1.5 s): the writes made before the signal, the job's result, and how long it took to end after it.
 */
export async function interruptWhileWaiting(
  emu: RunningEmulator,
  running: { child: ChildProcess; done: Promise<RunResult> },
  how: "terminal" | "ci",
): Promise<{ before: number; cancelled: RunResult; tookMs: number }> {
  let before = -1;
  for (let now = await writes(emu); now < 30 || now !== before; now = await writes(emu)) {
    before = now;
    await new Promise((r) => setTimeout(r, 1500));
  }
  const sentAt = interrupt(running.child, how);
  const cancelled = await running.done;
  return { before, cancelled, tookMs: Date.now() - sentAt };
}

/** Whether `pid` runs (a zombie, dead but not yet reaped, does not). */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/**
 * SIGKILL of a job started with start(): its process group, and every process below it. Pulumi
 * starts its plugins (the dynamic provider among them) in process groups of their own, so killing
 * the job's group alone leaves them running. They are collected before the kill (after it they
 * are re-parented) and killed by PID, never by name. Returns the PIDs, for checking none is left.
 */
export function killJob(child: ChildProcess): number[] {
  const pids = descendants(child.pid!);
  try {
    process.kill(-child.pid!, "SIGKILL");
  } catch {
    // the group is gone already
  }
  for (const pid of pids) {
    try {
      if (alive(pid)) process.kill(pid, "SIGKILL");
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

export function testStack(options: StackOptions) {
  const backend = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-backend-"));
  const name = options.name ?? "test";
  const apiKey = options.apiKey ?? options.emulator.adminToken;
  const viaEnv = options.credentials === "env";
  const baseConfig = viaEnv
    ? {}
    : { "accessctl:apiUrl": { value: options.emulator.url }, "accessctl:apiKey": { value: apiKey, secret: true } };
  const env = {
    ...(viaEnv ? { ACCESSCTL_API_URL: options.emulator.url, ACCESSCTL_API_KEY: apiKey } : {}),
    ...options.env,
  };

  // What an operation that ran left in the stack's config (Pulumi keeps config between runs), and the
  // stack config file as it was then: while the file is unchanged, a run sets only the values that
  // differ, and a stack an operation ran on is not selected again (each `pulumi` call costs about 0.3 s).
  let known: { values: Record<string, string>; file: string } | undefined;
  const configFile = path.join(options.project.dir, `Pulumi.${name}.yaml`);
  const readConfigFile = () => (fs.existsSync(configFile) ? fs.readFileSync(configFile, "utf8") : "");

  /** Starts an operation in its own process group (so that a test can kill Pulumi and all its children). */
  function start(
    op: string,
    spec?: Spec,
    extra: Record<string, unknown> = {},
  ): { child: ChildProcess; done: Promise<RunResult> } {
    // moreConfig: stack config for this run on top of the stack's (Pulumi keeps config between runs).
    // A spec with secret texts is itself secret config, as a user's secrets are.
    const { moreConfig, ...rest } = extra as { moreConfig?: Record<string, { value: string; secret?: boolean }> };
    type Config = Record<string, { value: string; secret?: boolean }>;
    const config: Config | undefined = spec
      ? ({
          ...baseConfig,
          ...options.extraConfig,
          ...moreConfig,
          spec: { value: JSON.stringify(spec), secret: (spec as { secretTexts?: boolean }).secretTexts === true },
        } as Config)
      : undefined;
    const before = known && known.file === readConfigFile() ? known : undefined;
    known = undefined; // unknown while this run sets config, and after it unless its operation ran
    const values = {
      ...before?.values,
      ...Object.fromEntries(Object.entries(config ?? {}).map(([k, c]) => [k, JSON.stringify([c.value, !!c.secret])])),
    };
    const job = {
      dir: options.project.dir,
      stack: name,
      op,
      binDir: options.project.binDir,
      node: options.project.nodeDir,
      backend: options.backendUrl ?? `file://${backend}`,
      config: config && Object.fromEntries(Object.entries(config).filter(([k]) => before?.values[k] !== values[k])),
      exists: !!before,
      ...rest,
      env: { ...env, ...(rest.env as Record<string, string> | undefined) },
    };
    const { child, done: raw } = spawnJob(job, { detached: true }) as { child: ChildProcess; done: Promise<any> };
    const done = raw.then((r: any) => {
      // An operation ran (it has an exit code): the stack exists and holds this run's config.
      if (typeof r.exitCode === "number" || (r.ok && ["outputs", "cancel"].includes(op)))
        known = { values, file: readConfigFile() };
      return { ...r, output: r.childStderr } as RunResult;
    });
    return { child, done };
  }

  function run(op: string, spec?: Spec, extra: Record<string, unknown> = {}): Promise<RunResult> {
    return start(op, spec, extra).done;
  }

  /** The checkpoint file of this stack in its file backend. */
  function stateFile(): string {
    const projectName = /^name:\s*(\S+)/m.exec(
      fs.readFileSync(path.join(options.project.dir, "Pulumi.yaml"), "utf8"),
    )![1];
    return path.join(backend, ".pulumi", "stacks", projectName, `${name}.json`);
  }

  return {
    backend,
    /**
     * What a user does when a killed `pulumi` left the file backend's checkpoint unreadable
     * ("failed to load checkpoint"): put back the one before it, which Pulumi keeps as <stack>.json.bak,
     * or, when the kill cut that one short too, the newest whole one of the stack's history.
     */
    restoreCheckpointBackup() {
      const file = stateFile();
      const history = path.join(backend, ".pulumi", "history", path.basename(path.dirname(file)), name);
      const older = fs.existsSync(history)
        ? fs
            .readdirSync(history)
            .filter((f) => f.endsWith(".checkpoint.json"))
            .sort()
            .reverse()
            .map((f) => path.join(history, f))
        : [];
      const whole = [`${file}.bak`, ...older].find((f) => {
        try {
          return !!JSON.parse(fs.readFileSync(f, "utf8")).checkpoint;
        } catch {
          return false;
        }
      });
      if (!whole) throw new Error(`no readable checkpoint to restore for ${file}`);
      fs.copyFileSync(whole, file);
    },
    run,
    start,
    /** Like run, but fails the test with Pulumi's output when the operation fails. */
    async ok(op: string, spec?: Spec, extra: Record<string, unknown> = {}): Promise<RunResult> {
      const result = await run(op, spec, extra);
      if (!result.ok) throw new Error(`pulumi ${op} failed: ${result.error}\n${result.output.slice(-6000)}`);
      return result;
    },
    /** The stack's checkpoint as the backend stores it (secrets encrypted). */
    state(): { resources: any[] } {
      const file = stateFile();
      return JSON.parse(fs.readFileSync(file, "utf8")).checkpoint.latest;
    },
    /** Every file the backend holds (state, backups, history), concatenated. */
    backendText(): string {
      const texts: string[] = [];
      const walk = (dir: string) => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
          const p = path.join(dir, entry.name);
          if (entry.isDirectory()) walk(p);
          else texts.push(fs.readFileSync(p, "utf8"));
        }
      };
      walk(backend);
      return texts.join("\n");
    },
    cleanup() {
      fs.rmSync(backend, { recursive: true, force: true });
    },
  };
}
