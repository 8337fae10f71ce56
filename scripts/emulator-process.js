// Starts the compiled emulator as a child process and resolves with its startup line (url, tokens,
// fixtures) once it is listening. Used by `npm start`, the benchmarks and the tests.
"use strict";
const { spawn } = require("node:child_process");
const path = require("node:path");
const readline = require("node:readline");

const REPO = path.resolve(__dirname, "..");

/** flags: emulator flags (after `--port 0`). Returns { child, startup, stderr(), exited }. */
function startEmulator(flags = [], env = {}) {
  const child = spawn(process.execPath, [path.join(REPO, "dist/emulator/main.js"), "--port", "0", ...flags], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    readline
      .createInterface({ input: child.stdout })
      .once("line", (line) => resolve({ child, startup: JSON.parse(line), stderr: () => stderr, exited }));
    child.once("exit", (code) => reject(new Error(`the emulator exited with ${code}: ${stderr}`)));
  });
}

module.exports = { startEmulator };
