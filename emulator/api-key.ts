// /api_keys: create (the only answer that carries the token), get, list, update, delete.
import { ApiKeyBody, ApiKeyList, API_KEYS_PATH } from "../contract/api-key";
import { answerText, checkByteLimits, checkFields, Ctx, found, page, textFields } from "./api";
import { apiError, shown } from "./errors";
import { Reply } from "./http";
import { KeyRecord } from "./records";

function view(ctx: Ctx, key: KeyRecord, token: string | null = null, listed = false): ApiKeyBody {
  return {
    id: key.id,
    uri: `${ctx.baseUrl}${API_KEYS_PATH}/${encodeURIComponent(key.id)}`,
    ...answerText(key, listed),
    created_at: key.createdAt,
    token,
    owner_id: key.ownerId,
  };
}

const find = (ctx: Ctx): KeyRecord => found(ctx, ctx.store.apiKeys, "API key");

export function create(ctx: Ctx): Reply {
  checkFields(ctx.body, { description: "string", metadata: "string", owner_id: "string" });
  checkByteLimits(ctx.body);
  const ownerId = (ctx.body.owner_id as string | undefined) ?? ctx.caller.id;
  if (ownerId !== ctx.caller.id) {
    if (!ctx.caller.admin) {
      throw apiError(
        403,
        "ERR_FORBIDDEN",
        `only admins may create an API key owned by someone else (owner_id ${shown(ownerId)})`,
      );
    }
    if (!ctx.store.principal(ctx.account, ownerId)) {
      throw apiError(
        400,
        "ERR_UNKNOWN_OWNER",
        `owner_id does not name a user or bot of this account: ${shown(ownerId)}`,
      );
    }
  }
  const { key, token } = ctx.store.createKey(ctx.account, ownerId, textFields(ctx.body));
  return { status: 201, body: view(ctx, key, token) };
}

export function get(ctx: Ctx): Reply {
  return { status: 200, body: view(ctx, find(ctx)) };
}

export function list(ctx: Ctx): Reply {
  const { items, uri, next_page_uri } = page(ctx, API_KEYS_PATH, ctx.store.apiKeys);
  return {
    status: 200,
    body: { keys: items.map((k) => view(ctx, k, null, true)), uri, next_page_uri } satisfies ApiKeyList,
  };
}

export function update(ctx: Ctx): Reply {
  const key = find(ctx);
  checkFields(
    ctx.body,
    { description: "string", metadata: "string" },
    {
      owner_id: "the owner of an API key cannot be changed; create a new key instead",
    },
  );
  checkByteLimits(ctx.body);
  return { status: 200, body: view(ctx, ctx.store.updateKey(key, textFields(ctx.body))) };
}

export function remove(ctx: Ctx): Reply {
  ctx.store.deleteKey(find(ctx));
  return { status: 204 };
}
