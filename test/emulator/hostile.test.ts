// Hostile requests (issue 11): each answered in the one error shape, nothing from the request
// echoed unless it looks like an id, no body read before authentication.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as readline from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, client, listAll, raw, REPO, RunningEmulator, startEmulator } from "../helpers/emulator";

let emu: RunningEmulator;
let admin: ReturnType<typeof client>;

beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  admin = client(emu.url, emu.adminToken);
});
afterAll(async () => {
  expect(await emu.stop()).toBe(0);
});

function expectShape(res: { status?: number; body: any }, statuses: number[]) {
  expect(statuses).toContain(res.status);
  expect(res.body).toEqual({
    error_code: expect.stringMatching(/^ERR_[A-Z_]+$/),
    status_code: res.status,
    msg: expect.any(String),
    details: { operation_id: expect.stringMatching(/^op_/) },
  });
}

const headers = (token: string) => `Host: x\r\nAuthorization: Bearer ${token}\r\nService-Version: 2\r\n`;

describe("malformed requests", () => {
  it("answers a malformed percent-escape in an id with 400 or 404, not 500", async () => {
    for (const id of ["%ZZ", "%E0%A4%A", "%C0%AF", "%ED%A0%80", "%", "ak_%"]) {
      for (const path of [`/api_keys/${id}`, `/ip_policy_rules/${id}`, `/edges/tls/${id}/mutual_tls`]) {
        expectShape(await admin.get(path), [400, 404]);
        expectShape(await admin.delete(path), [400, 404]);
      }
    }
    expect(emu.stderr()).not.toMatch(/internal error|URIError/);
  });

  it("answers an absolute-form target that is not a valid URL instead of closing the socket", async () => {
    const res = await raw(emu.url, `GET http://[::1/api_keys HTTP/1.1\r\n${headers(emu.adminToken)}\r\n`);
    expectShape(res, [400]);
    expect(res.headers["x-operation-id"]).toBe(res.body.details.operation_id);
    expect(emu.stderr()).not.toMatch(/unhandled/);
  });

  it("answers what Node's HTTP parser refuses (431, malformed) in the error shape with an operation id", async () => {
    const big = await raw(
      emu.url,
      `GET /api_keys HTTP/1.1\r\n${headers(emu.adminToken)}X-Big: ${"a".repeat(20_000)}\r\n\r\n`,
    );
    expectShape(big, [431]);
    expect(big.headers["x-operation-id"]).toBe(big.body.details.operation_id);
    const garbage = await raw(emu.url, "NOT HTTP AT ALL\r\n\r\n");
    expectShape(garbage, [400]);
    expect(garbage.headers["x-operation-id"]).toBe(garbage.body.details.operation_id);
  });
});

describe("echoes", () => {
  it("echoes no value from the request unless it looks like an id, and caps what it echoes", async () => {
    const token = (await admin.post("/api_keys", { description: "pasted by mistake" })).body.token as string;
    const rule = (
      await admin.post("/ip_policy_rules", {
        cidr: "10.200.0.0/16",
        ip_policy_id: emu.fixtures.ipPolicies[0],
        action: "allow",
      })
    ).body;
    const key = (await admin.post("/api_keys", {})).body;
    const responses = [
      await admin.post("/ip_policy_rules", {
        cidr: "10.201.0.0/16",
        ip_policy_id: emu.fixtures.ipPolicies[0],
        action: token,
      }),
      await admin.post("/api_keys", { [token]: "x" }),
      await admin.patch(`/api_keys/${key.id}`, { [token]: "x" }),
      await admin.patch(`/ip_policy_rules/${rule.id}`, { [token]: 1 }),
      await admin.post("/api_keys", "{}", { "content-type": token }),
      await admin.post("/api_keys", `{"description": ${token}}`),
      await admin.get("/api_keys", { "service-version": token }),
      await admin.get(`/api_keys?limit=${token}`),
      await admin.get(`/api_keys?${token}=1`),
      await admin.get(`/api_keys?${token.slice(-32)}=1`), // the secret part alone
      await admin.get(`/api_keys?before_id=${token}`),
      await admin.get(`/api_keys?before_seq=${token}`),
      await admin.post("/ip_policy_rules", { cidr: token, ip_policy_id: emu.fixtures.ipPolicies[0], action: "allow" }),
    ];
    for (const res of responses) {
      expectShape(res, [400, 415]);
      expect(res.text).not.toContain(token);
      expect(res.text).not.toContain(token.slice(-20));
    }
    // A repeated parameter: the first is used, and the list's own link does not carry the second.
    const repeated = await admin.get(`/api_keys?limit=5&limit=${token}`);
    expect(repeated.status).toBe(200);
    expect(repeated.body.uri).toBe(`${emu.url}/api_keys?limit=5`);
    expect(repeated.text).not.toContain(token.slice(-20));
    const huge = await admin.post("/ip_policy_rules", {
      cidr: "10.202.0.0/16",
      ip_policy_id: emu.fixtures.ipPolicies[0],
      action: "x".repeat(900_000),
    });
    expectShape(huge, [400]);
    expect(huge.text.length).toBeLessThan(1000);
    expect(emu.stderr()).not.toContain(token.slice(-20));
  });

  it("treats names of Object.prototype members as unknown fields", async () => {
    const key = (await admin.post("/api_keys", {})).body;
    const rule = (
      await admin.post("/ip_policy_rules", {
        cidr: "10.203.0.0/16",
        ip_policy_id: emu.fixtures.ipPolicies[0],
        action: "allow",
      })
    ).body;
    for (const name of ["toString", "constructor", "__proto__", "hasOwnProperty", "valueOf"]) {
      const body = `{"${name}": "x"}`;
      for (const res of [
        await admin.post("/api_keys", body),
        await admin.patch(`/api_keys/${key.id}`, body),
        await admin.patch(`/ip_policy_rules/${rule.id}`, body),
        await admin.put(`/edges/tls/${emu.fixtures.tlsEdges[0]}/mutual_tls`, body),
      ]) {
        expectShape(res, [400]);
        expect(res.body.error_code).toBe("ERR_UNKNOWN_FIELD");
        expect(res.text).not.toMatch(/native code|function/);
      }
    }
  });
});

describe("bodies", () => {
  it("answers an unauthenticated upload from its headers, without waiting for its body, and closes", async () => {
    const started = Date.now();
    const res = await raw(
      emu.url,
      `POST /api_keys HTTP/1.1\r\nHost: x\r\nService-Version: 2\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{"descr`,
    );
    expectShape(res, [401]);
    expect(res.closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it("answers 413 to a body declared or sent over 1 MiB, stops reading it and closes", async () => {
    const declared = await raw(
      emu.url,
      `POST /api_keys HTTP/1.1\r\n${headers(emu.adminToken)}Content-Type: application/json\r\nContent-Length: ${2 << 20}\r\n\r\n{`,
    );
    expectShape(declared, [413]);
    expect(declared.closed).toBe(true);
    // Chunked: the size is known only while reading; the client keeps sending.
    const chunk = Buffer.alloc(64 * 1024, "a");
    const sent = await raw(
      emu.url,
      `POST /api_keys HTTP/1.1\r\n${headers(emu.adminToken)}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
      3000,
      (socket) => {
        const timer = setInterval(() => {
          if (socket.destroyed) return clearInterval(timer);
          socket.write(`${chunk.length.toString(16)}\r\n`);
          socket.write(chunk);
          socket.write("\r\n");
        }, 5);
        socket.once("close", () => clearInterval(timer));
      },
    );
    expectShape(sent, [413]);
    expect(sent.closed).toBe(true);
  });
});

describe("UTF-8", () => {
  it("answers 400 to a JSON body that is not valid UTF-8, and stores nothing", async () => {
    const stored = async () =>
      [
        ...(await listAll(emu.url, emu.adminToken, "/api_keys", "keys")),
        ...(await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")),
      ].length;
    const before = await stored();
    const rule = `"cidr":"10.210.0.0/16","ip_policy_id":"${emu.fixtures.ipPolicies[0]}","action":"allow",`;
    // A lone byte, an overlong "/", a UTF-16 surrogate, a cut sequence, a code point past U+10FFFF.
    for (const bytes of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80]]) {
      for (const [path, fields] of [
        ["/api_keys", ""],
        ["/ip_policy_rules", rule],
      ]) {
        const res = await fetch(`${emu.url}${path}`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${emu.adminToken}`,
            "service-version": "2",
            "content-type": "application/json",
          },
          body: Buffer.concat([
            Buffer.from(`{${fields}"description":"bad `),
            Buffer.from(bytes),
            Buffer.from(' utf8"}'),
          ]),
        });
        const answer = { status: res.status, body: await res.json() };
        expectShape(answer, [400]);
        expect(answer.body.msg).toMatch(/UTF-8/);
      }
    }
    expect(await stored()).toBe(before);
    // Valid multi-byte text still passes.
    expect((await admin.post("/api_keys", { description: "ünïcødé €😀" })).body.description).toBe("ünïcødé €😀");
  });
});

describe("slow and silent clients", () => {
  it("cost the emulator no descriptor once its request timeout has answered them (200 connections that never read or close)", async () => {
    // The emulator with a 1 s request timeout (60 s in the product), in a process of its own so
    // that /proc counts its descriptors only.
    const script = `
      const { createEmulator } = require("./dist/emulator/server.js");
      const { Store } = require("./dist/emulator/store.js");
      const store = new Store();
      const tokens = store.issueFixtureTokens();
      createEmulator({ store, requestTimeoutMs: 1000 }).listen(0, "127.0.0.1").then((url) => console.log(JSON.stringify({ url, token: tokens.admin })));`;
    const child = spawn(process.execPath, ["-e", script], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
    const sockets: net.Socket[] = [];
    try {
      const { url, token } = await new Promise<{ url: string; token: string }>((resolve, reject) => {
        readline.createInterface({ input: child.stdout! }).once("line", (line) => resolve(JSON.parse(line)));
        child.once("exit", (code) => reject(new Error(`exited with ${code}`)));
      });
      const descriptors = () => fs.readdirSync(`/proc/${child.pid}/fd`).length;
      const baseline = descriptors();
      const { port } = new URL(url);
      const requests = [
        "GET /api_keys HT", // a partial request line
        "", // nothing at all
        `POST /api_keys HTTP/1.1\r\n${headers(token)}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"descr`, // a stalled body
      ];
      const answers: string[] = [];
      await Promise.all(
        Array.from(
          { length: 200 },
          (_, i) =>
            new Promise<void>((resolve, reject) => {
              // Half-open allowed and paused: it neither reads the answer nor closes when the server does.
              const socket = net.connect({ port: Number(port), host: "127.0.0.1", allowHalfOpen: true }, () => {
                socket.write(requests[i % requests.length]);
                resolve();
              });
              socket.pause();
              socket.on("error", reject);
              sockets.push(socket);
            }),
        ),
      );
      await until(() => descriptors() >= baseline + 200, 10_000);
      expect(descriptors()).toBeGreaterThanOrEqual(baseline + 200);
      // 1 s of timeout, checked every 0.5 s, then 1 s to read the answer and close: 20 s is generous.
      await until(() => descriptors() <= baseline + 5, 20_000);
      expect(descriptors()).toBeLessThanOrEqual(baseline + 5);
      // What they were answered, read only now.
      for (const socket of sockets.slice(0, 3)) {
        let text = "";
        socket.on("data", (d) => (text += d)).resume();
        await until(() => text.includes("\r\n"), 5000);
        answers.push(text.split("\r\n")[0]);
      }
      expect(answers).toEqual([
        "HTTP/1.1 408 Request Timeout",
        "HTTP/1.1 408 Request Timeout",
        "HTTP/1.1 408 Request Timeout",
      ]);
    } finally {
      sockets.forEach((s) => s.destroy());
      child.kill("SIGKILL");
    }
  }, 60_000);
});

async function until(done: () => boolean, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !done() && Date.now() < end;) await new Promise((r) => setTimeout(r, 100));
}

describe("links", () => {
  it("builds links from the Host the client used when it names the server, so --host localhost pages", async () => {
    const local = await startEmulator(["--host", "localhost", "--rate-limit", "off"]);
    try {
      const base = `http://localhost:${new URL(local.url).port}`;
      const viaName = client(base, local.adminToken);
      const created = await viaName.post("/api_keys", { description: "one" });
      expect(created.body.uri).toBe(`${base}/api_keys/${created.body.id}`);
      await viaName.post("/api_keys", { description: "two" });
      const first = await viaName.get("/api_keys?limit=1");
      expect(first.body.uri).toBe(`${base}/api_keys?limit=1`);
      expect(first.body.next_page_uri).toMatch(new RegExp(`^${base}/api_keys\\?`));
      const second = await call(base, local.adminToken, "GET", first.body.next_page_uri);
      expect(second.status).toBe(200);
      // A Host that does not name the server is not used.
      const spoofed = await raw(
        local.url,
        `GET /api_keys?limit=1 HTTP/1.1\r\n${headers(local.adminToken).replace("Host: x", "Host: evil.example")}\r\n`,
      );
      expect(spoofed.status).toBe(200);
      expect(spoofed.text).not.toContain("evil.example");
    } finally {
      await local.stop();
    }
  });

  it("builds links from --public-url when given", async () => {
    const proxied = await startEmulator(["--public-url", "https://emulator.example:8443/", "--rate-limit", "off"]);
    try {
      const created = await client(proxied.url, proxied.adminToken).post("/api_keys", {});
      expect(created.body.uri).toBe(`https://emulator.example:8443/api_keys/${created.body.id}`);
    } finally {
      await proxied.stop();
    }
    await expect(startEmulator(["--public-url", "ftp://x"])).rejects.toThrow(/--public-url/);
  });
});
