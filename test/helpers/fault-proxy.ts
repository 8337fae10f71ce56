// A small HTTP proxy on loopback in front of the emulator that fails chosen requests, as a gateway
// between the provider and the service can: a request answered with an error WITHOUT being
// forwarded (the service never acted on it), or forwarded and its answer replaced by an error
// (the service acted on it; the answer was lost). Everything else passes through unchanged.
import * as http from "node:http";
import { AddressInfo } from "node:net";

export interface Fault {
  method: string;
  /** The request path must match (query strings aside). */
  path: RegExp;
  /** And, when given, the request body. */
  body?: RegExp;
  /** "before": answer without forwarding; "after": forward, then drop the service's answer. */
  when: "before" | "after";
  /** The status answered instead (default 502). */
  status?: number;
  /** How many matching requests to fail (default 1; Infinity: every one). */
  times?: number;
  /** Let this many matching requests through first (a service that limits after 20 writes). */
  skip?: number;
  /** A Retry-After header on the failure ("60"). */
  retryAfter?: string;
  /**
   * Hold the request this long before forwarding it, or before refusing it ("before": a gateway that
   * times out without forwarding). A service whose
   * clock is known only from whole-second Date headers can prove a creation later than a second
   * after the send, not sooner.
   */
  delayMs?: number;
  /**
   * "after" only: hold the service's answer this long before dropping it (a gateway that times out
   * after the service acted). A creation time shown as ".650" may be any moment of its hundredth (and
   * ".000" of its second): only a failure that comes back later than that proves the creation before it.
   */
  answerDelayMs?: number;
  /**
   * The body answered instead of the default JSON error (a gateway that echoes the request, say):
   * made from the request; sent as application/json when it parses as JSON, else as text/html.
   */
  answer?: (request: { method: string; path: string; headers: http.IncomingHttpHeaders; body: string }) => string;
}

export interface FaultProxy {
  url: string;
  /** Fail the next matching request(s). */
  fail(fault: Fault): void;
  /** "<METHOD> <path> <status>" of every request failed so far. */
  failed: string[];
  /**
   * Runs `action` once, when the service has answered the `nth` (1-based) request matching `method`
   * and `path`, before that answer goes back (another user acting between two requests of a run).
   */
  afterRequest(method: string, path: RegExp, nth: number, action: () => Promise<unknown>): void;
  /**
   * Forwards writes (any method but GET) one at a time and runs `action` after each, before its
   * answer goes back: every state the service passes through is seen (a snapshot of it, say).
   */
  serialWrites(action: () => Promise<unknown>): void;
  /** Holds every matching request this long, then forwards it and its answer unchanged (a slow gateway). */
  hold(method: string, path: RegExp, ms: number): void;
  /** Requests that reached the proxy so far (every method). */
  requests: number;
  /** Fails the `nth` request from now (1-based, every method counted) as `fault` says (its method and path aside). */
  failNth(nth: number, fault: Pick<Fault, "when" | "status">): void;
  close(): Promise<void>;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const faults: (Fault & { left: number; skipped: number })[] = [];
  const hooks: { method: string; path: RegExp; left: number; action: () => Promise<unknown> }[] = [];
  const failed: string[] = [];
  const holds: { method: string; path: RegExp; ms: number }[] = [];
  let serial: (() => Promise<unknown>) | undefined;
  let writes = Promise.resolve(); // the chain serialWrites forwards writes on
  const count = { requests: 0, failAt: 0, fault: undefined as Pick<Fault, "when" | "status"> | undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const path = (req.url ?? "/").split("?")[0];
      const text = Buffer.concat(chunks).toString("utf8");
      count.requests++;
      const nth =
        count.fault && count.requests === count.failAt
          ? { ...count.fault, method: req.method!, path: /./, left: 0, skipped: 0 }
          : undefined;
      let fault: (Fault & { left: number; skipped: number }) | undefined =
        nth ??
        faults.find(
          (f) => f.left > 0 && f.method === req.method && f.path.test(path) && (!f.body || f.body.test(text)),
        );
      if (fault && !nth && fault.skipped < (fault.skip ?? 0)) {
        fault.skipped++;
        fault = undefined;
      }
      if (fault && !nth) fault.left--;
      const refuse = () => {
        const status = fault!.status ?? 502;
        failed.push(`${req.method} ${path} ${status}`);
        const answer = fault!.answer?.({ method: req.method!, path, headers: req.headers, body: text });
        const type = answer === undefined || isJson(answer) ? "application/json" : "text/html";
        res.writeHead(status, {
          "content-type": type,
          ...(fault!.retryAfter ? { "retry-after": fault!.retryAfter } : {}),
        });
        res.end(
          answer ??
            JSON.stringify({
              error_code: status === 429 ? "ERR_RATE_LIMITED" : "ERR_TEST_GATEWAY",
              msg: `injected ${status} (${fault!.when === "after" ? "request forwarded, answer lost" : "request not forwarded"})`,
            }),
        );
      };
      if (fault?.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
      const held = holds.find((h) => h.method === req.method && h.path.test(path));
      if (held) await new Promise((r) => setTimeout(r, held.ms));
      if (fault?.when === "before") return refuse();
      let release = () => {};
      if (serial && req.method !== "GET") {
        const turn = writes;
        writes = new Promise<void>((r) => (release = r));
        await turn;
      }
      try {
        const headers: Record<string, string> = {};
        // (fetch sets the length of the body it sends itself, and refuses one given that it does not count as it does)
        for (const [k, v] of Object.entries(req.headers))
          if (typeof v === "string" && !["host", "connection", "content-length"].includes(k)) headers[k] = v;
        const body = chunks.length ? Buffer.concat(chunks) : undefined;
        const upstream = await fetch(target + req.url, { method: req.method, headers, body });
        const text = Buffer.from(await upstream.arrayBuffer());
        if (serial && req.method !== "GET") await serial();
        release();
        if (fault?.answerDelayMs) await new Promise((r) => setTimeout(r, fault.answerDelayMs));
        if (fault) return refuse();
        const out: Record<string, string> = {};
        upstream.headers.forEach((v, k) => {
          if (!["content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"].includes(k))
            out[k] = v;
        });
        res.writeHead(upstream.status, out);
        const hook = hooks.find((h) => h.left > 0 && h.method === req.method && h.path.test(path) && --h.left === 0);
        if (hook) await hook.action(); // before the answer reaches the client: the run cannot move on first
        res.end(text);
      } catch (e) {
        release();
        res.writeHead(599);
        res.end(`${String(e)} ${String((e as { cause?: unknown }).cause)}`);
      }
    });
  });
  // Node closes a keep-alive socket idle for 5 s by default: on a loaded machine a client may send on one
  // the proxy just closed (ECONNRESET before the request went out), which no test here is about.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    fail: (fault) => faults.push({ ...fault, left: fault.times ?? 1, skipped: 0 }),
    afterRequest: (method, path, nth, action) => hooks.push({ method, path, left: nth, action }),
    serialWrites: (action) => void (serial = action),
    hold: (method, path, ms) => void holds.push({ method, path, ms }),
    get requests() {
      return count.requests;
    },
    failNth: (nth, fault) => Object.assign(count, { failAt: count.requests + nth, fault }),
    failed,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
