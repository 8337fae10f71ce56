// A private PostgreSQL cluster for a test: initdb in a temp directory, on a free loopback port,
// run as the `postgres` user when we are root (PostgreSQL refuses to run as root), stopped and
// removed by stop(). Needs Debian's `postgresql` package (initdb and pg_ctl under /usr/lib/postgresql).
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

export interface Postgres {
  /** A backend URL for `pulumi login`. */
  url: string;
  stop(): Promise<void>;
}

function binDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = fs.existsSync(root)
    ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, "bin", "initdb")))
    : [];
  if (versions.length) return path.join(root, versions.sort((a, b) => Number(b) - Number(a))[0], "bin");
  throw new Error(
    "PostgreSQL not found: apt-get install -y postgresql (gives /usr/lib/postgresql/<version>/bin/initdb)",
  );
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}

export async function startPostgres(): Promise<Postgres> {
  const bin = binDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-pg-"));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) execFileSync("chown", ["postgres:postgres", dir]);
  const run = (cmd: string, args: string[]) =>
    execFileSync(
      asRoot ? "runuser" : path.join(bin, cmd),
      asRoot ? ["-u", "postgres", "--", path.join(bin, cmd), ...args] : args,
      { stdio: "pipe", cwd: dir },
    );
  const data = path.join(dir, "data");
  run("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  run("pg_ctl", ["-D", data, "-o", options, "-l", path.join(dir, "log"), "-w", "start"]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable`,
    async stop() {
      try {
        run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
