// Makes projects the way users have them: `npm pack` this package, then a directory with a
// Pulumi.yaml, a package.json that depends on the tarball and on the user's own @pulumi/pulumi, and
// the program files; `npm install` there. Used by `npm start`, the end-to-end tests and the
// benchmarks, so that what runs is what users install (Pulumi serializes our provider from
// node_modules, as it will for them).
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const REPO = path.resolve(__dirname, "..");
/** The @pulumi/pulumi we build against (our devDependency); users bring their own (a peer dependency). */
const DEV_PULUMI_VERSION = require(path.join(REPO, "package.json")).devDependencies["@pulumi/pulumi"];

/** `npm pack` into dir; returns the tarball's path. */
function packTarball(dir) {
  const packed = JSON.parse(
    execFileSync("npm", ["pack", "--json", "--pack-destination", dir], {
      cwd: REPO,
      stdio: ["ignore", "pipe", "inherit"],
    }).toString(),
  );
  return path.join(dir, packed[0].filename);
}

/**
 * A project directory `dir` (created) holding files { "name in project": "source path" } or a whole
 * example directory (`from`), depending on the tarball and on @pulumi/pulumi `pulumiVersion`.
 * TypeScript projects (a .ts main) get typescript and @types/node as a user's template has them.
 */
function makeProject(dir, { name, tarball, files = {}, from, main, pulumiVersion = DEV_PULUMI_VERSION }) {
  fs.mkdirSync(dir, { recursive: true });
  if (from) fs.cpSync(from, dir, { recursive: true, filter: (src) => !/node_modules/.test(path.relative(from, src)) });
  for (const [target, source] of Object.entries(files)) fs.copyFileSync(source, path.join(dir, target));
  const pkgFile = path.join(dir, "package.json");
  const pkg = fs.existsSync(pkgFile) ? JSON.parse(fs.readFileSync(pkgFile, "utf8")) : { name, private: true };
  pkg.dependencies = { ...pkg.dependencies, "@accessctl/pulumi": `file:${tarball}`, "@pulumi/pulumi": pulumiVersion };
  const typescript = (main ?? "").endsWith(".ts") || fs.existsSync(path.join(dir, "tsconfig.json"));
  if (typescript) pkg.devDependencies = { typescript: "~5.9.3", "@types/node": "^22", ...pkg.devDependencies };
  fs.writeFileSync(pkgFile, JSON.stringify(pkg, null, 2));
  if (!fs.existsSync(path.join(dir, "Pulumi.yaml"))) {
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), `name: ${name}\nruntime: nodejs\n${main ? `main: ${main}\n` : ""}`);
  }
  if (typescript && !fs.existsSync(path.join(dir, "tsconfig.json"))) {
    fs.copyFileSync(path.join(REPO, "examples/quickstart/tsconfig.json"), path.join(dir, "tsconfig.json"));
  }
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel", "error"], {
    cwd: dir,
    stdio: ["ignore", "inherit", "inherit"],
  });
  return dir;
}

/** A fresh temp root with the tarball and one project in root/project. Returns { root, dir, tarball }. */
function packProject(name, files, options = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const tarball = packTarball(root);
  const dir = makeProject(path.join(root, "project"), { name, tarball, files, ...options });
  return { root, dir, tarball };
}

/**
 * The directory holding pulumi, the dynamic-provider plugin and `parts` (scripts/pulumi-cli --bin-dir):
 * any of "nodejs", "yaml", "python", "go" (language hosts) and "sdkgen" (pulumi-sdkgen). Each is built
 * on first use; the Node.js host alone keeps `npm start`'s first run from building the others.
 */
function pulumiBinDir(parts = ["nodejs"]) {
  return execFileSync(path.join(REPO, "scripts/pulumi-cli"), ["--bin-dir", ...parts], {
    stdio: ["ignore", "pipe", "inherit"],
  })
    .toString()
    .trim();
}

/**
 * A PULUMI_HOME of its own with the plugin installed from its tarball, as users install it
 * (`pulumi plugin install resource accessctl <version> --file …`), and only what is installed there
 * or beside `pulumi` used (PULUMI_IGNORE_AMBIENT_PLUGINS). Returns { env, cleanup }: the environment
 * for stacks that use it, and the removal of the directory.
 */
function pluginHome(binDir, tarball) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-pulumi-home-"));
  const version = /-v([^-]+)-linux-amd64\.tar\.gz$/.exec(tarball)[1];
  const env = { PULUMI_HOME: home, PULUMI_IGNORE_AMBIENT_PLUGINS: "true" };
  execFileSync(
    path.join(binDir, "pulumi"),
    ["plugin", "install", "resource", "accessctl", version, "--file", tarball],
    { env: { ...process.env, ...env, PATH: `${binDir}${path.delimiter}${process.env.PATH}` }, stdio: "pipe" },
  );
  return { env, cleanup: () => fs.rmSync(home, { recursive: true, force: true }) };
}

module.exports = { packTarball, makeProject, packProject, pulumiBinDir, pluginHome, REPO, DEV_PULUMI_VERSION };
