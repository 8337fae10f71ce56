// /edges/tls/{id}/mutual_tls: replace (PUT), get, delete the mutual TLS module of a TLS edge.
import { MUTUAL_TLS_ENABLED_DEFAULT, MutualTlsBody } from "../contract/tls-edge-mutual-tls";
import { checkFields, Ctx } from "./api";
import { apiError, notFound, shown } from "./errors";
import { Reply } from "./http";
import { ModuleRecord } from "./records";

function edgeOf(ctx: Ctx): string {
  const edgeId = ctx.params.id;
  if (!ctx.account.tlsEdges.includes(edgeId)) throw notFound("TLS edge", edgeId);
  return edgeId;
}

function find(ctx: Ctx): ModuleRecord {
  const edgeId = edgeOf(ctx);
  const module = ctx.store.module(ctx.account, edgeId);
  if (!module) throw notFound("mutual TLS module of TLS edge", edgeId);
  return module;
}

function view(ctx: Ctx, module: ModuleRecord): MutualTlsBody {
  return {
    enabled: module.enabled,
    certificate_authorities: module.certificateAuthorityIds.map((id) => ({
      id,
      uri: `${ctx.baseUrl}/certificate_authorities/${encodeURIComponent(id)}`,
    })),
  };
}

export function replace(ctx: Ctx): Reply {
  const edgeId = edgeOf(ctx);
  checkFields(ctx.body, { enabled: "boolean", certificate_authority_ids: "string[]" });
  const caIds = (ctx.body.certificate_authority_ids as string[] | undefined) ?? [];
  const seen = new Set<string>();
  for (const id of caIds) {
    if (!ctx.account.certificateAuthorities.includes(id)) {
      throw apiError(
        400,
        "ERR_UNKNOWN_CERTIFICATE_AUTHORITY",
        `certificate_authority_ids: no such certificate authority: ${shown(id)}`,
      );
    }
    if (seen.has(id))
      throw apiError(
        400,
        "ERR_DUPLICATE_CERTIFICATE_AUTHORITY",
        `certificate_authority_ids: ${shown(id)} is listed twice`,
      );
    seen.add(id);
  }
  const enabled = (ctx.body.enabled as boolean | undefined) ?? MUTUAL_TLS_ENABLED_DEFAULT;
  return { status: 200, body: view(ctx, ctx.store.putModule(ctx.account, edgeId, enabled, caIds)) };
}

export function get(ctx: Ctx): Reply {
  return { status: 200, body: view(ctx, find(ctx)) };
}

export function remove(ctx: Ctx): Reply {
  ctx.store.deleteModule(find(ctx));
  return { status: 204 };
}
