// /api_keys: create (the only answer that carries the token), get, list, update, delete.
import { apiError, checkByteLimits, checkFields, Ctx, notFound, optionalText, page, Route, shown } from "./server";
import { hashToken, KeyRecord, newId, newToken } from "./store";

function view(ctx: Ctx, key: KeyRecord, token: string | null = null) {
  return {
    id: key.id,
    uri: `${ctx.baseUrl}/api_keys/${encodeURIComponent(key.id)}`,
    ...optionalText(key),
    created_at: key.createdAt,
    token,
    owner_id: key.ownerId,
  };
}

function find(ctx: Ctx): KeyRecord {
  const id = ctx.params[0];
  const key = ctx.store.keys.find((k) => k.id === id && k.accountId === ctx.account.id);
  if (!key) throw notFound("API key", id);
  return key;
}

export const routes: Route[] = [
  {
    pattern: /^\/api_keys$/,
    methods: {
      POST(ctx) {
        checkFields(ctx.body, { description: "string", metadata: "string", owner_id: "string" });
        checkByteLimits(ctx.body);
        const ownerId = (ctx.body.owner_id as string | undefined) ?? ctx.caller.id;
        if (ownerId !== ctx.caller.id) {
          if (!ctx.caller.admin) {
            throw apiError(403, "ERR_FORBIDDEN", `only admins may create an API key owned by someone else (owner_id ${shown(ownerId)})`);
          }
          if (!ctx.store.principal(ctx.account, ownerId)) {
            throw apiError(400, "ERR_UNKNOWN_OWNER", `owner_id does not name a user or bot of this account: ${shown(ownerId)}`);
          }
        }
        const id = newId("ak_");
        const token = newToken(id);
        const key: KeyRecord = {
          id,
          accountId: ctx.account.id,
          ownerId,
          description: (ctx.body.description as string | undefined) ?? "",
          metadata: (ctx.body.metadata as string | undefined) ?? "",
          createdAt: new Date().toISOString(),
          seq: ctx.store.nextSeq(),
          tokenHash: hashToken(token),
        };
        ctx.store.keys.push(key);
        ctx.store.save();
        return { status: 201, body: view(ctx, key, token) };
      },
      GET(ctx) {
        const keys = ctx.store.keys.filter((k) => k.accountId === ctx.account.id);
        const { page: items, uri, next_page_uri } = page(ctx, "/api_keys", keys);
        return { status: 200, body: { keys: items.map((k) => view(ctx, k)), uri, next_page_uri } };
      },
    },
  },
  {
    pattern: /^\/api_keys\/([^/]+)$/,
    methods: {
      GET(ctx) {
        return { status: 200, body: view(ctx, find(ctx)) };
      },
      PATCH(ctx) {
        const key = find(ctx);
        checkFields(ctx.body, { description: "string", metadata: "string" }, {
          owner_id: "the owner of an API key cannot be changed; create a new key instead",
        });
        checkByteLimits(ctx.body);
        if (typeof ctx.body.description === "string") key.description = ctx.body.description;
        if (typeof ctx.body.metadata === "string") key.metadata = ctx.body.metadata;
        ctx.store.save();
        return { status: 200, body: view(ctx, key) };
      },
      DELETE(ctx) {
        const key = find(ctx);
        ctx.store.keys.splice(ctx.store.keys.indexOf(key), 1);
        ctx.store.save();
        return { status: 204 };
      },
    },
  },
];
