// The package as users get it from `npm pack`: what the tarball holds, no install-time scripts,
// and the emulator's `bin`, started from a user's project with npx to try stacks offline.
import { execFileSync, spawn } from "node:child_process";
import * as readline from "node:readline";
import { describe, expect, inject, it } from "vitest";
import { call } from "../helpers/emulator";

describe("the packed package", () => {
  it("holds the compiled code, LICENSE, README and the API reference, and no install scripts", () => {
    const { tarball } = inject("e2e");
    const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" })
      .trim()
      .split("\n")
      .map((f) => f.replace(/^package\//, ""));
    expect(files).toEqual(
      expect.arrayContaining([
        "LICENSE",
        "README.md",
        "docs/api-contract.md",
        "package.json",
        "dist/sdk/index.js",
        "dist/sdk/index.d.ts",
        "dist/provider/api-key.js",
        "dist/emulator/main.js",
      ]),
    );
    expect(
      files.filter(
        (f) => !/^(dist\/|docs\/|schema\/schema\.json$|templates\/|LICENSE$|README\.md$|package\.json$)/.test(f),
      ),
    ).toEqual([]);
    // The reference docs, the plugin's schema, the export command and the template; not the repository's own Pulumi project.
    expect(files).toEqual(
      expect.arrayContaining([
        "docs/reference/README.md",
        "docs/reference/typescript/IpPolicyRule.md",
        "schema/schema.json",
        "dist/tools/export.js",
        "templates/accessctl-typescript/Pulumi.yaml",
      ]),
    );
    const pkg = JSON.parse(execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" }));
    for (const hook of ["preinstall", "install", "postinstall", "prepare"]) expect(pkg.scripts?.[hook]).toBeUndefined();
    expect(pkg.peerDependencies["@pulumi/pulumi"]).toMatch(/^>=3\.\d+\.\d+ <4$/);
    expect(pkg.dependencies["@pulumi/pulumi"]).toBeUndefined();
    expect(pkg.bin).toEqual({
      "accessctl-emulator": "dist/emulator/main.js",
      "accessctl-export": "dist/tools/export.js",
    });
  });

  it("starts the emulator with `npx accessctl-emulator` from a user's project", async () => {
    const { dir } = inject("e2e");
    const child = spawn("npx", ["--no-install", "accessctl-emulator", "--port", "0"], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: child.stdout! }).once("line", resolve);
        child.once("exit", (code) => reject(new Error(`accessctl-emulator exited with ${code}`)));
      });
      const startup = JSON.parse(line);
      expect(startup.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const keys = await call(startup.url, startup.adminToken, "GET", "/api_keys");
      expect(keys.status).toBe(200);
    } finally {
      process.kill(-child.pid!, "SIGTERM"); // npx and the emulator it started: the group we made
    }
  });
});
