// API keys on the wire (contract §2.1, §4.1).
import { ListEnvelope } from "./common";

/** An API key as the API returns it. `token` is a string only in the answer to its creation. */
export interface ApiKeyBody {
  id: string;
  uri: string;
  description?: string;
  metadata?: string;
  created_at: string;
  token: string | null;
  owner_id: string;
}

export interface ApiKeyCreateBody {
  description?: string;
  metadata?: string;
  owner_id?: string;
}

/** Update changes only these two; `owner_id` is not an update parameter. */
export interface ApiKeyUpdateBody {
  description?: string;
  metadata?: string;
}

export interface ApiKeyList extends ListEnvelope {
  keys: ApiKeyBody[];
}

export const API_KEYS_PATH = "/api_keys";

/** What every answer holding a key carries (field → type); the answer to a create also carries its `token`. */
export const API_KEY_ANSWER = { id: "string", uri: "string", created_at: "string", owner_id: "string" } as const;
