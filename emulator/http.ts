// The transport: reading a request's body (bounded) and its JSON, and sending an answer with its
// operation id. What handlers share of the API itself is in api.ts; errors come from errors.ts.
import * as http from "node:http";
import { apiError } from "./errors";

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const MAX_BODY_BYTES = 1 << 20;
export const OPERATION_ID_HEADER = "x-operation-id";

export function send(res: http.ServerResponse, operationId: string, reply: Reply): void {
  const payload = reply.body === undefined ? "" : JSON.stringify(reply.body);
  res.statusCode = reply.status;
  res.setHeader(OPERATION_ID_HEADER, operationId);
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  if (payload) {
    res.setHeader("content-type", "application/json");
    res.setHeader("content-length", Buffer.byteLength(payload));
  }
  res.end(payload);
}

/** Reads the body up to MAX_BODY_BYTES; past that it stops reading and answers 413. */
export function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const tooLarge = () => apiError(413, "ERR_BODY_TOO_LARGE", `request body is over ${MAX_BODY_BYTES} bytes`);
  if (Number(req.headers["content-length"]) > MAX_BODY_BYTES) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk);
      req.off("data", onData);
      req.pause();
      reject(tooLarge());
    };
    req.on("data", onData);
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Returns the body object, or undefined when the request has no body. */
export function parseJsonBody(raw: Buffer, contentType: string | undefined): Record<string, unknown> | undefined {
  if (raw.length === 0) return undefined;
  const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase();
  if (mediaType !== "application/json") {
    throw apiError(
      415,
      "ERR_UNSUPPORTED_MEDIA_TYPE",
      "request bodies must be sent with 'Content-Type: application/json'",
    );
  }
  let text: string;
  try {
    // Buffer's toString would put U+FFFD in place of bytes that are not UTF-8, and store that.
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(raw);
  } catch {
    throw apiError(400, "ERR_INVALID_JSON", "request body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // JSON.parse's own message quotes the body, which may hold a secret.
    throw apiError(400, "ERR_INVALID_JSON", "request body is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw apiError(400, "ERR_INVALID_BODY", "request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}
