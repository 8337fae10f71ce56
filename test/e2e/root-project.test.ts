// The repository root is a Pulumi project (Pulumi.yaml, index.ts = the quickstart program), run as
// docs/guides/emulator.md says ("The repository as a Pulumi project"), on a fresh copy of the checkout (the files git knows, nothing
// built): `npm ci`, `npm run emulator` (which builds dist/) with its startup line in a file,
// `scripts/emulator-config.js` on that file, then the real `pulumi up`, a clean
// `preview --refresh --expect-no-changes`, and `destroy`. The program imports "@accessctl/pulumi",
// which the root resolves to its own dist/sdk (a package may import itself by name).
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, expect, inject, it } from "vitest";
import { client, REPO } from "../helpers/emulator";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pulumi } = require("../../scripts/stack.js");

const root = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-root-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

it("index.ts at the root is the quickstart program", () => {
  expect(fs.readFileSync(path.join(REPO, "index.ts"), "utf8")).toBe(
    fs.readFileSync(path.join(REPO, "examples/quickstart/index.ts"), "utf8"),
  );
});

it("a fresh copy of the repository: npm ci, emulator, pulumi up at the root, preview clean, destroy", async () => {
  const copy = path.join(root, "repo");
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: REPO })
    .toString()
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    if (!fs.existsSync(path.join(REPO, file))) continue; // deleted in the work tree
    fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
    fs.copyFileSync(path.join(REPO, file), path.join(copy, file));
  }
  expect(fs.existsSync(path.join(copy, "dist"))).toBe(false);
  execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel", "error"], {
    cwd: copy,
    stdio: ["ignore", "inherit", "inherit"],
  });

  // The guide's terminal 1, in a process group of its own (a signal to npm does not reach the emulator).
  fs.mkdirSync(path.join(copy, ".state"));
  const startupFile = path.join(copy, ".state/emulator-startup.json");
  const terminal1 = spawn(
    "sh",
    ["-c", "npm run --silent emulator -- --port 0 --data .state/emulator.json > .state/emulator-startup.json"],
    { cwd: copy, detached: true, stdio: ["ignore", "ignore", "inherit"] },
  );
  const exited = new Promise((resolve) => terminal1.once("exit", resolve));
  try {
    for (
      let waited = 0;
      !(fs.existsSync(startupFile) && fs.readFileSync(startupFile, "utf8").includes("\n"));
      waited += 200
    ) {
      if (waited > 180_000 || terminal1.exitCode !== null)
        throw new Error("the emulator did not print its startup line");
      await new Promise((r) => setTimeout(r, 200));
    }
    const { url, adminToken, fixtures } = JSON.parse(fs.readFileSync(startupFile, "utf8").split("\n")[0]);
    const { binDir, nodeDir } = inject("e2e");
    const job = {
      dir: copy,
      binDir,
      node: nodeDir,
      backend: `file://${path.join(root, "backend")}`,
      passphrase: "root-project",
    };
    fs.mkdirSync(path.join(root, "backend"));
    const must = async (args: string[]) => {
      const r = await pulumi(job, args, { quiet: true });
      expect(r.code, `pulumi ${args.join(" ")}\n${r.stdout}\n${r.stderr}`).toBe(0);
      return r;
    };
    await must(["stack", "init", "emulator", "--non-interactive"]);
    execFileSync(process.execPath, ["scripts/emulator-config.js", ".state/emulator-startup.json"], {
      cwd: copy,
      env: {
        ...process.env,
        PATH: [nodeDir, binDir, process.env.PATH].filter(Boolean).join(path.delimiter),
        PULUMI_BACKEND_URL: job.backend,
        PULUMI_CONFIG_PASSPHRASE: job.passphrase,
        PULUMI_SKIP_UPDATE_CHECK: "true",
      },
      stdio: ["ignore", "inherit", "inherit"],
    });
    expect(fs.readFileSync(path.join(copy, "Pulumi.emulator.yaml"), "utf8")).not.toContain(adminToken); // set --secret

    await must(["up", "--yes", "--non-interactive", "--stack", "emulator"]);
    const api = client(url, adminToken);
    const rules = (await api.get("/ip_policy_rules")).body.ip_policy_rules.filter(
      (r: any) => r.ip_policy.id === fixtures.ipPolicies[0],
    );
    expect(rules.map((r: any) => `${r.action} ${r.cidr}`).sort()).toEqual([
      "allow 2001:db8:1234::/48",
      "allow 203.0.113.0/24",
      "deny 198.51.100.0/24",
      "deny 2001:db8:dead::/48",
    ]);
    expect((await api.get(`/edges/tls/${fixtures.tlsEdges[0]}/mutual_tls`)).body.enabled).toBe(true);
    await must(["preview", "--refresh", "--diff", "--expect-no-changes", "--non-interactive", "--stack", "emulator"]);
    await must(["destroy", "--yes", "--non-interactive", "--stack", "emulator"]);
    expect((await api.get("/ip_policy_rules")).body.ip_policy_rules).toEqual([]);
  } finally {
    process.kill(-terminal1.pid!, "SIGTERM");
    await exited;
  }
});
