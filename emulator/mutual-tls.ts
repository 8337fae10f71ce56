// /edges/tls/{id}/mutual_tls: replace (PUT), get, delete the mutual TLS module of a TLS edge.
import { apiError, checkFields, Ctx, notFound, Route, shown } from "./server";
import { ModuleRecord } from "./store";

function edgeOf(ctx: Ctx): string {
  const edgeId = ctx.params[0];
  if (!ctx.account.tlsEdges.includes(edgeId)) throw notFound("TLS edge", edgeId);
  return edgeId;
}

function view(ctx: Ctx, module: ModuleRecord) {
  return {
    enabled: module.enabled,
    certificate_authorities: module.certificateAuthorityIds.map((id) => ({
      id,
      uri: `${ctx.baseUrl}/certificate_authorities/${encodeURIComponent(id)}`,
    })),
  };
}

export const routes: Route[] = [
  {
    pattern: /^\/edges\/tls\/([^/]+)\/mutual_tls$/,
    methods: {
      PUT(ctx) {
        const edgeId = edgeOf(ctx);
        checkFields(ctx.body, { enabled: "boolean", certificate_authority_ids: "string[]" });
        const caIds = (ctx.body.certificate_authority_ids as string[] | undefined) ?? [];
        const seen = new Set<string>();
        for (const id of caIds) {
          if (!ctx.account.certificateAuthorities.includes(id)) {
            throw apiError(400, "ERR_UNKNOWN_CERTIFICATE_AUTHORITY", `certificate_authority_ids: no such certificate authority: ${shown(id)}`);
          }
          if (seen.has(id)) throw apiError(400, "ERR_DUPLICATE_CERTIFICATE_AUTHORITY", `certificate_authority_ids: ${shown(id)} is listed twice`);
          seen.add(id);
        }
        const module: ModuleRecord = {
          accountId: ctx.account.id,
          edgeId,
          enabled: (ctx.body.enabled as boolean | undefined) ?? true,
          certificateAuthorityIds: caIds,
        };
        const index = ctx.store.modules.findIndex((m) => m.edgeId === edgeId);
        if (index >= 0) ctx.store.modules[index] = module;
        else ctx.store.modules.push(module);
        ctx.store.save();
        return { status: 200, body: view(ctx, module) };
      },
      GET(ctx) {
        const edgeId = edgeOf(ctx);
        const module = ctx.store.modules.find((m) => m.edgeId === edgeId);
        if (!module) throw notFound("mutual TLS module of TLS edge", edgeId);
        return { status: 200, body: view(ctx, module) };
      },
      DELETE(ctx) {
        const edgeId = edgeOf(ctx);
        const index = ctx.store.modules.findIndex((m) => m.edgeId === edgeId);
        if (index < 0) throw notFound("mutual TLS module of TLS edge", edgeId);
        ctx.store.modules.splice(index, 1);
        ctx.store.save();
        return { status: 204 };
      },
    },
  },
];
