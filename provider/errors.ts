// Errors as `pulumi` shows them best: one line per resource. The dynamic-provider host returns a
// failed read/delete/check/diff to the engine (shown under the resource) and also logs it as
// `${err}: ${err.stack}` to stderr, which the engine prints under the stack: the message twice and
// a stack trace of our internals. Our errors carry their message as their stack, and the provider
// process drops exactly that log line (`Error: M: M`); any other error keeps its stack trace.
// Plain Errors with fields: a subclass loses its message through Pulumi's serialization.
// Every message is scrubbed of the process's credentials here (http/redact.ts): every error the
// provider throws is made by plainError or changed by setMessage (test/provider/secrets.test.ts
// checks that provider/ makes no other), and the host's log of any other error goes through
// quietHostErrorLog's scrub.
import { scrub } from "./http/redact";
import { processState } from "./state";

export function plainError<T extends object>(message: string, fields?: T): Error & T {
  const text = scrub(message);
  const err = Object.assign(new Error(text), fields);
  err.stack = text;
  return err;
}

/** Sets an error's message (and its stack, which stands for it). */
export function setMessage<T extends Error>(err: T, message: string): T {
  const text = scrub(message);
  err.message = text;
  err.stack = text;
  return err;
}

/**
 * In the provider process: drop the host's second, stack-trace copy of our errors, and scrub what
 * else the host logs (another error's message and stack). Idempotent.
 */
export function quietHostErrorLog(): void {
  const state = processState<{ quiet?: boolean }>("quiet-host-errors", () => ({}));
  if (state.quiet) return;
  state.quiet = true;
  const original = console.error;
  console.error = (...args: unknown[]) => {
    const line = args[0];
    if (args.length === 1 && typeof line === "string" && line.startsWith("Error: ")) {
      const rest = line.slice("Error: ".length);
      const message = rest.slice(0, (rest.length - 2) / 2);
      if (rest === `${message}: ${message}`) return;
    }
    original.apply(
      console,
      args.map((a) => (typeof a === "string" ? scrub(a) : a instanceof Error ? scrub(`${a.stack ?? a}`) : a)),
    );
  };
}
