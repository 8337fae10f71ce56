// Method + path → handler. Paths are written with named parameters (`:id`), matched segment by
// segment on the raw path, and each parameter is percent-decoded on its own, so an encoded `/`
// stays inside its segment.
import { API_KEYS_PATH } from "../contract/api-key";
import { IP_POLICY_RULES_PATH } from "../contract/ip-policy-rule";
import { MUTUAL_TLS_PATH_SUFFIX, TLS_EDGES_PATH } from "../contract/tls-edge-mutual-tls";
import { Ctx } from "./api";
import * as apiKey from "./api-key";
import { apiError } from "./errors";
import { Reply } from "./http";
import * as ipPolicyRule from "./ip-policy-rule";
import * as tlsEdgeMutualTls from "./tls-edge-mutual-tls";

type Handler = (ctx: Ctx) => Reply;

const ROUTES: Record<string, Partial<Record<string, Handler>>> = {
  [API_KEYS_PATH]: { POST: apiKey.create, GET: apiKey.list },
  [`${API_KEYS_PATH}/:id`]: { GET: apiKey.get, PATCH: apiKey.update, DELETE: apiKey.remove },
  [IP_POLICY_RULES_PATH]: { POST: ipPolicyRule.create, GET: ipPolicyRule.list },
  [`${IP_POLICY_RULES_PATH}/:id`]: { GET: ipPolicyRule.get, PATCH: ipPolicyRule.update, DELETE: ipPolicyRule.remove },
  [`${TLS_EDGES_PATH}/:id${MUTUAL_TLS_PATH_SUFFIX}`]: {
    PUT: tlsEdgeMutualTls.replace,
    GET: tlsEdgeMutualTls.get,
    DELETE: tlsEdgeMutualTls.remove,
  },
};

const TABLE = Object.entries(ROUTES).map(([path, methods]) => ({ segments: path.split("/"), methods }));

/** Words of the routes' paths: the parts of a path that logs and messages may show as they are. */
export const PATH_WORDS = new Set(TABLE.flatMap((r) => r.segments.filter((s) => !s.startsWith(":"))));

/** The handler for a request, with its path parameters; 404 for no such path, 405 for a wrong method. */
export function route(
  method: string,
  pathname: string,
  shownPath: string,
): { handler: Handler; params: Record<string, string> } {
  const segments = pathname.split("/");
  for (const r of TABLE) {
    const params = match(r.segments, segments);
    if (!params) continue;
    const handler = r.methods[method];
    if (!handler) {
      throw apiError(405, "ERR_METHOD_NOT_ALLOWED", `method ${method} is not allowed on ${shownPath}`, {
        allow: Object.keys(r.methods).join(", "),
      });
    }
    for (const [name, raw] of Object.entries(params)) params[name] = decode(raw);
    return { handler, params };
  }
  throw apiError(404, "ERR_NOT_FOUND", `no such path: ${shownPath}`);
}

function match(pattern: string[], segments: string[]): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, word] of pattern.entries()) {
    if (!word.startsWith(":")) {
      if (word !== segments[i]) return undefined;
    } else if (segments[i] === "") {
      return undefined;
    } else {
      params[word.slice(1)] = segments[i];
    }
  }
  return params;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw apiError(400, "ERR_INVALID_PATH", "the path holds a malformed percent-escape");
  }
}
