// TlsEdgeMutualTls: the mutual TLS module of a TLS edge. Create and update are the contract's PUT
// (so creating one takes over whatever module the edge had); the resource id is the edge id.
// This module is the dynamic provider itself (see provider/api-key.ts).
import { ID_PREFIX } from "../contract/common";
import {
  MUTUAL_TLS_ANSWER,
  MUTUAL_TLS_ENABLED_DEFAULT,
  MUTUAL_TLS_PATH_SUFFIX,
  MutualTlsBody,
  MutualTlsReplaceBody,
  TLS_EDGES_PATH,
} from "../contract/tls-edge-mutual-tls";
import { api, apiPath } from "./http/api";
import {
  changedFields,
  checkFields,
  Fields,
  liveInputs,
  outputsOf,
  propertyDiff,
  Reference,
  updateBody,
} from "./fields";
import { report } from "./engine";
import { claim, claimed } from "./ownership";
import { checkConnection, keptInputs, PROFILE_FIELD, ProfileInput } from "./profiles";
import { profileSource } from "./config";
import { boolean, CheckFailure, id, idProblem, isUnknown } from "./validate";

export { configure } from "./config";

/** The inputs of a TlsEdgeMutualTls; the SDK's TlsEdgeMutualTlsArgs is made from this (its docs too). */
export interface TlsEdgeMutualTlsInputs extends ProfileInput {
  /** The TLS edge (`edgtls_…`). Changing it moves the module: the old edge's module is deleted. */
  edgeId: string;
  /** The certificate authorities (`ca_…`) that sign accepted client certificates, in order, no repeats. */
  certificateAuthorityIds: string[];
  /** Whether the module applies to traffic. Default true. */
  enabled?: boolean;
}

export interface TlsEdgeMutualTlsOutputs {
  edgeId: string;
  enabled: boolean;
  certificateAuthorityIds: string[];
  certificateAuthorities: Reference[];
  profile?: string;
}

/** The ids of certificate authorities: each a `ca_…` id, none twice; elements not known yet pass. */
function authorityIds(ids: unknown): string | CheckFailure[] {
  if (!Array.isArray(ids)) return "must be a list of ids (ca_…)";
  const failures: CheckFailure[] = [];
  ids.forEach((ca: unknown, i: number) => {
    const problem = isUnknown(ca) ? undefined : idProblem(ca, [ID_PREFIX.certificateAuthority]);
    if (problem)
      failures.push({ property: `certificateAuthorityIds[${i}]`, reason: `certificateAuthorityIds[${i}] ${problem}` });
    else if (!isUnknown(ca) && ids.indexOf(ca) !== i)
      failures.push({
        property: `certificateAuthorityIds[${i}]`,
        reason: `certificateAuthorityIds lists ${String(ca)} twice`,
      });
  });
  return failures;
}

/**
 * Every input, its way in and back. The module moves with its edge, or to another account, by
 * replacement; the rest is one PUT. `enabled` is stated with its default, as the service reports it.
 */
export const FIELDS: Fields<TlsEdgeMutualTlsInputs, keyof MutualTlsReplaceBody> = {
  edgeId: {
    read: (_b: MutualTlsBody, edgeId: string) => edgeId,
    required: true,
    check: id(ID_PREFIX.tlsEdge),
    onChange: "replace",
  },
  certificateAuthorityIds: {
    wire: "certificate_authority_ids",
    read: (b: MutualTlsBody) => b.certificate_authorities.map((ca) => ca.id),
    required: ": the ids (ca_…) of the authorities that sign accepted client certificates",
    check: authorityIds,
    same: (a, b) => JSON.stringify(a ?? []) === JSON.stringify(b ?? []), // order counts
    onChange: "update",
    unset: [],
  },
  enabled: {
    wire: "enabled",
    read: (b: MutualTlsBody) => b.enabled,
    declare: "stated",
    check: boolean,
    same: (a, b) => (a ?? MUTUAL_TLS_ENABLED_DEFAULT) === (b ?? MUTUAL_TLS_ENABLED_DEFAULT),
    onChange: "update",
    unset: MUTUAL_TLS_ENABLED_DEFAULT,
  },
  profile: PROFILE_FIELD,
};

const modulePath = (edgeId: string) => TLS_EDGES_PATH + apiPath`/${edgeId}` + MUTUAL_TLS_PATH_SUFFIX;

/** The outputs of a module the service showed: the table's fields, and the authorities as references. */
function toOutputs(edgeId: string, body: MutualTlsBody): TlsEdgeMutualTlsOutputs {
  const fields = outputsOf<Omit<TlsEdgeMutualTlsOutputs, "certificateAuthorities">>(FIELDS, body, edgeId);
  return { ...fields, certificateAuthorities: body.certificate_authorities.map((ca) => ({ id: ca.id, uri: ca.uri })) };
}

export async function check(_olds: TlsEdgeMutualTlsInputs, news: TlsEdgeMutualTlsInputs) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  const inputs = checkFields(FIELDS, news, failures);
  return { inputs, failures };
}

export async function diff(_id: string, olds: TlsEdgeMutualTlsOutputs, news: TlsEdgeMutualTlsInputs) {
  const { replaces, updates } = changedFields(FIELDS, olds, news);
  return {
    changes: replaces.length + updates.length > 0,
    replaces,
    deleteBeforeReplace: false,
    detailedDiff: propertyDiff({ replaces, updates }),
  };
}

/** Create and update alike: the contract's PUT sets the module as a whole. */
async function put(inputs: TlsEdgeMutualTlsInputs): Promise<TlsEdgeMutualTlsOutputs> {
  const edgeId = inputs.edgeId;
  const body = updateBody<MutualTlsReplaceBody>(FIELDS, inputs);
  const res = await api<MutualTlsBody>("PUT", modulePath(edgeId), {
    what: `set mutual TLS of TLS edge ${edgeId}`,
    body,
    expect: MUTUAL_TLS_ANSWER,
    source: profileSource(inputs.profile),
  });
  return { ...toOutputs(edgeId, res.body), ...keptInputs(inputs) };
}

export async function create(inputs: TlsEdgeMutualTlsInputs) {
  claim("TLS edge", inputs.edgeId, `set mutual TLS of TLS edge ${inputs.edgeId}`);
  return { id: inputs.edgeId, outs: await put(inputs) };
}

export async function read(id: string, props: Partial<TlsEdgeMutualTlsOutputs> = {}) {
  const res = await api<MutualTlsBody>("GET", modulePath(id), {
    what: `read mutual TLS of TLS edge ${id}`,
    allow404: true,
    expect: MUTUAL_TLS_ANSWER,
    source: profileSource(props.profile),
  });
  if (res.status === 404) return {}; // removed outside Pulumi: refresh drops it
  const outs = toOutputs(id, res.body);
  // Inputs as the live module would declare them, so that `preview --diff` after a refresh marks the
  // drifted properties (see ip-policy-rule.ts).
  const inputs = { ...liveInputs<TlsEdgeMutualTlsInputs>(FIELDS, outs), ...keptInputs(props) };
  return { id, props: { ...outs, ...keptInputs(props) }, inputs };
}

export async function update(_id: string, _olds: TlsEdgeMutualTlsOutputs, news: TlsEdgeMutualTlsInputs) {
  return { outs: await put(news) };
}

async function remove(id: string, props: TlsEdgeMutualTlsOutputs & { __urn?: string }): Promise<void> {
  // Replaced in this run by a module on the same edge (another profile of one account, say): the
  // replacement has just set it; deleting it now would take mutual TLS off the edge behind its back.
  if (claimed("TLS edge", id)) {
    report(
      props.__urn,
      `delete mutual TLS of TLS edge ${id}: left in place: the TlsEdgeMutualTls that replaces it in this run has set ` +
        `it`,
      { warning: true },
    );
    return;
  }
  await api("DELETE", modulePath(id), {
    what: `delete mutual TLS of TLS edge ${id}`,
    allow404: true,
    source: profileSource(props.profile),
  });
}
export { remove as delete };
