// The plugin's SDKs as committed (sdks/) are what `npm run sdks` writes from schema/schema.json with
// Pulumi's own generators (written again into a temporary directory and compared file by file), and
// the reference docs' examples work with them (scripts/check-examples.js): TypeScript type-checked
// against @accessctl/pulumi and sdks/nodejs, Go built against sdks/go, Python run under Pulumi's
// mocks in a fresh venv with PyPI pulumi at our @pulumi/pulumi's version and sdks/python installed
// (so the Python SDK pip-installs), YAML parsed. Needs Go (pulumi-sdkgen) and python3 with venv.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const REPO = path.resolve(__dirname, "../..");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { generateSdks } = require("../../scripts/sdks.js");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { check } = require("../../scripts/check-examples.js");

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-sdks-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The files of a directory, as git keeps them (build output left by pip or tsc is not ours). */
function files(root: string): string[] {
  const ignored = /(^|\/)(__pycache__|build|bin|node_modules|[^/]+\.egg-info)(\/|$)/;
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .filter((f) => !ignored.test(f))
    .sort();
}

describe("the plugin's SDKs", () => {
  it("are what `npm run sdks` generates from schema/schema.json", () => {
    const out = path.join(tmp, "sdks");
    generateSdks(out);
    const committed = path.join(REPO, "sdks");
    expect(files(committed)).toEqual(files(out));
    for (const f of files(out))
      expect(fs.readFileSync(path.join(committed, f), "utf8"), `sdks/${f}: run npm run sdks`).toBe(
        fs.readFileSync(path.join(out, f), "utf8"),
      );
  });

  it("run the reference's examples in every language; the Python SDK pip-installs beside PyPI's pulumi", () => {
    const pulumiVersion = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).devDependencies[
      "@pulumi/pulumi"
    ];
    const venv = path.join(tmp, "venv");
    execFileSync("python3", ["-m", "venv", venv], { stdio: "inherit" });
    const python = path.join(venv, "bin/python");
    // A copy of sdks/python: pip's build leaves build/ and *.egg-info beside the sources.
    const pySdk = path.join(tmp, "python-sdk");
    fs.cpSync(path.join(REPO, "sdks/python"), pySdk, { recursive: true });
    execFileSync(
      python,
      ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", `pulumi==${pulumiVersion}`, pySdk],
      { stdio: "inherit" },
    );
    expect(
      execFileSync(
        python,
        [
          "-c",
          "import pulumi_accessctl, importlib.metadata as m; print(m.version('pulumi'), m.version('pulumi_accessctl'))",
        ],
        { encoding: "utf8" },
      ).trim(),
    ).toBe(`${pulumiVersion} ${JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).version}`);
    check(["typescript", "go", "python", "yaml"], { python });
  });
});
