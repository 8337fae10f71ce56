// The mutual TLS module of a TLS edge on the wire (contract §2.4, §4.3). It has no id of its own:
// it lives at /edges/tls/{edge id}/mutual_tls and is replaced as a whole.
import { Ref } from "./common";

/** The TLS edges' collection; a module's path is TLS_EDGES_PATH + "/" + edge id + MUTUAL_TLS_PATH_SUFFIX. */
export const TLS_EDGES_PATH = "/edges/tls";
export const MUTUAL_TLS_PATH_SUFFIX = "/mutual_tls";

/** `enabled` when a replace leaves it out. */
export const MUTUAL_TLS_ENABLED_DEFAULT = true;

export interface MutualTlsBody {
  enabled: boolean;
  certificate_authorities: Ref[];
}

export interface MutualTlsReplaceBody {
  enabled?: boolean;
  certificate_authority_ids?: string[];
}

/** What every answer holding a module carries (field → type). */
export const MUTUAL_TLS_ANSWER = { enabled: "boolean", certificate_authorities: "array" } as const;
