// Facts of the contract (docs/api-contract.md) shared by the provider and the emulator:
// wire shapes and constants only, no logic, so that each side's validation stays its own.

/** The interface version every request names in `Service-Version`. */
export const SERVICE_VERSION = "2";

/** Byte limits (UTF-8) on the free-text fields of an API key or an IP policy rule (contract §8). */
export const TEXT_LIMITS = { description: 255, metadata: 4096 } as const;
export type TextField = keyof typeof TEXT_LIMITS;

/** Type prefixes of the contract's opaque identifiers (contract §2), without the underscore. */
export const ID_PREFIX = {
  apiKey: "ak",
  ipPolicyRule: "ipr",
  ipPolicy: "ipp",
  certificateAuthority: "ca",
  user: "usr",
  bot: "bot",
  tlsEdge: "edgtls",
} as const;

/** A reference to another object (contract §2.3). */
export interface Ref {
  id: string;
  uri: string;
}

/** Every list envelope carries its own URI and the next page's, null on the last page (§2.5, §4.4). */
export interface ListEnvelope {
  uri: string;
  next_page_uri: string | null;
}

/** The most objects one list page holds (the service's page size; the emulator's `limit` maximum). */
export const MAX_PAGE_SIZE = 100;

/** The error body. The contract leaves errors unspecified (§7); this is the shape the emulator answers. */
export interface ErrorBody {
  error_code: string;
  status_code: number;
  msg: string;
  details: { operation_id: string };
}
