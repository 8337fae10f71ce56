// Host 2: the provider modules served over Pulumi's provider protocol, as the plugin
// `pulumi-resource-accessctl` (host 1 is Pulumi's dynamic-provider host, sdk/). Nothing here knows
// a resource: each request goes to the module of its type token, with the same check / diff /
// create / read / update / delete the dynamic host calls, and comes back in the protocol's terms.
// What the protocol adds, and this file does:
// - Configure hands the stack config (`accessctl:*`) to config.ts, as the dynamic host's configure
//   does; a plain-text apiKey is refused there (only Configure sees which values are secrets).
//   CheckConfig refuses a bad URL or limit at preview; DiffConfig never replaces (a stack moving
//   from the dynamic classes changes provider, and that must not replace anything).
// - The resource's URN goes to the modules as `__urn` (messages under it, and which resource of a
//   run manages a policy), and the names of the inputs the program made secret as `__secrets` (a
//   plan never shows their values); both are taken out of whatever goes back.
// - Secrets: the engine sends them marked (Configure accepts secrets), so this file marks what goes
//   back: every property whose input was secret (what the engine does for a provider that does not
//   accept them), and the outputs the schema calls secret (an API key's token).
// - A per-property diff (DetailedDiff), so that Pulumi shows each changed rule of a set.
// - Read without properties (`pulumi import`); Invoke for the list functions; Cancel.
import * as grpc from "@grpc/grpc-js";
import * as anyproto from "google-protobuf/google/protobuf/any_pb";
import * as emptyproto from "google-protobuf/google/protobuf/empty_pb";
import * as structproto from "google-protobuf/google/protobuf/struct_pb";
import * as plugproto from "@pulumi/pulumi/proto/plugin_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import * as statusproto from "@pulumi/pulumi/proto/status_pb";
import * as apiKey from "../provider/api-key";
import { isSecretValue, SECRET_SIG, SECRET_VALUE, unwrapSecrets } from "../provider/secret-values";
import { configProblems, configure as configureProvider, plainTextKey, profilesHoldKey } from "../provider/config";
import { stopRequests, watchEngine } from "../provider/engine";
import { scrub } from "../provider/http/redact";
import * as ipPolicyRule from "../provider/ip-policy-rule";
import { bounded, inOperation } from "../provider/operation";
import * as ipPolicyRuleSet from "../provider/ip-policy-rule-set";
import * as tlsEdgeMutualTls from "../provider/tls-edge-mutual-tls";

type Props = Record<string, any>;

/** What every provider module offers (the dynamic host calls the same functions). */
interface ProviderModule {
  check(olds: Props, news: Props): Promise<{ inputs: Props; failures: { property: string; reason: string }[] }>;
  diff(id: string, olds: Props, news: Props): Promise<{ changes: boolean; replaces: string[]; deleteBeforeReplace?: boolean; detailedDiff?: Record<string, string> }>;
  create(inputs: Props): Promise<{ id: string; outs: Props }>;
  read(id: string, props?: Props): Promise<{ id?: string; props?: Props; inputs?: Props }>;
  update(id: string, olds: Props, news: Props): Promise<{ outs: Props }>;
  delete(id: string, props: Props): Promise<void>;
}

/** Each operation bounded in time (provider/operation.ts). */
export const RESOURCES: Record<string, ProviderModule> = {
  "accessctl:index:ApiKey": bounded(apiKey as unknown as ProviderModule),
  "accessctl:index:IpPolicyRule": bounded(ipPolicyRule as unknown as ProviderModule),
  "accessctl:index:IpPolicyRuleSet": bounded(ipPolicyRuleSet as unknown as ProviderModule),
  "accessctl:index:TlsEdgeMutualTls": bounded(tlsEdgeMutualTls as unknown as ProviderModule),
};

/** The functions, by token: each returns the list its result holds (under the one property the schema names). */
export const FUNCTIONS: Record<string, (args: Props) => Promise<unknown>> = {
  "accessctl:index:listIpPolicyRules": (args) => inOperation(() => ipPolicyRule.listIpPolicyRules(args)),
  "accessctl:index:listApiKeys": () => inOperation(() => apiKey.listApiKeys()),
};


/** The properties whose value holds a secret anywhere. */
const secretKeys = (value: Props): string[] => Object.keys(value).filter((k) => JSON.stringify(value[k] ?? null).includes(SECRET_SIG));

/** Marks `keys` of `values` as secrets (those it has). */
const markSecret = (values: Props, keys: string[]): Props => ({ ...values, ...Object.fromEntries(keys.filter((k) => values[k] !== undefined).map((k) => [k, { [SECRET_SIG]: SECRET_VALUE, value: values[k] }])) });

/** What a module gets of a request's properties: the values, and the names of the secret ones. */
const plainWith = (s: structproto.Struct | undefined, urn: string): Props => {
  const raw = (s?.toJavaScript() ?? {}) as Props;
  const secrets = secretKeys(raw);
  return { ...unwrapSecrets(raw), __urn: urn, ...(secrets.length ? { __secrets: secrets } : {}) };
};

const fromStruct = (s: structproto.Struct | undefined): Props => unwrapSecrets(s?.toJavaScript() ?? {});
/** Values for the wire: no undefined (a Struct has no such value) and no keys of one host's own (__urn, __provider). */
const toStruct = (value: Props) => structproto.Struct.fromJavaScript(JSON.parse(JSON.stringify(value, (k, v) => (k === "__urn" || k === "__secrets" || k === "__provider" ? undefined : v))));

export interface ServerOptions {
  version: string;
  schema: string;
}

/** The outputs of a type that the schema calls secret. */
function secretOutputs(schema: string): Record<string, string[]> {
  const resources = (JSON.parse(schema).resources ?? {}) as Record<string, { properties?: Record<string, { secret?: boolean }> }>;
  return Object.fromEntries(Object.entries(resources).map(([token, r]) => [token, Object.entries(r.properties ?? {}).filter(([, p]) => p.secret).map(([name]) => name)]));
}

/** The property each function's result holds its list under, as the schema names it. */
function resultProperties(schema: string): Record<string, string> {
  const functions = (JSON.parse(schema).functions ?? {}) as Record<string, { outputs?: { properties?: Record<string, unknown> } }>;
  return Object.fromEntries(Object.entries(functions).map(([token, f]) => [token, Object.keys(f.outputs?.properties ?? {})[0]]));
}

/** The ResourceProvider service over the modules. */
export function providerService(options: ServerOptions): grpc.UntypedServiceImplementation {
  const secrets = secretOutputs(options.schema);
  const results = resultProperties(options.schema);
  const moduleOf = (urn: string): [string, ProviderModule] => {
    const token = urn.split("::")[2]?.split("$").pop() ?? "";
    const found = RESOURCES[token];
    if (!found) throw new Error(`unknown resource type ${token}`);
    return [token, found];
  };
  /** Outputs for the engine: those of secret inputs (`from`: what the request held), and the schema's secrets, marked. */
  const outputs = (token: string, outs: Props, from: Props) => toStruct(markSecret(outs, [...new Set([...(from.__secrets ?? []), ...(secrets[token] ?? [])])]));

  return {
    // The engine falls back to the older handshake when this is not implemented.
    handshake: unimplemented("Handshake"),
    parameterize: unimplemented("Parameterize"),
    construct: unimplemented("Construct"),
    call: unimplemented("Call"),
    attach: unimplemented("Attach"),
    list: (stream: grpc.ServerWritableStream<unknown, unknown>) => stream.emit("error", { code: grpc.status.UNIMPLEMENTED, details: "List is not implemented" }),
    getMapping: unary(async () => new provproto.GetMappingResponse()),
    getMappings: unary(async () => new provproto.GetMappingsResponse()),
    getPluginInfo: unary(async () => new plugproto.PluginInfo().setVersion(options.version)),
    getSchema: unary(async () => new provproto.GetSchemaResponse().setSchema(options.schema)),
    cancel: unary(async () => {
      stopRequests("the operation was cancelled");
      return new emptyproto.Empty();
    }),

    checkConfig: unary(async (req: provproto.CheckRequest) => {
      const news = fromStruct(req.getNews());
      const resp = new provproto.CheckResponse().setInputs(req.getNews());
      return resp.setFailuresList(configProblems(news).map((f) => new provproto.CheckFailure().setProperty(f.property).setReason(f.reason)));
    }),
    diffConfig: unary(async (req: provproto.DiffRequest) => {
      const changed = JSON.stringify(fromStruct(req.getOlds())) !== JSON.stringify(fromStruct(req.getNews()));
      return new provproto.DiffResponse().setChanges(changed ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE);
    }),
    configure: unary(async (req: provproto.ConfigureRequest) => {
      const raw = (req.getArgs()?.toJavaScript() ?? {}) as Props;
      // Only here does the engine say which config values are secrets.
      if (typeof raw.apiKey === "string") throw new Error(plainTextKey());
      if (raw.profiles !== undefined && !isSecretValue(raw.profiles) && profilesHoldKey(raw.profiles)) throw new Error(plainTextKey("accessctl:profiles"));
      const values = unwrapSecrets(raw);
      await configureProvider({ config: { get: (key: string) => values[key.replace(/^accessctl:/, "")] } });
      watchEngine();
      // Secrets come marked from now on (so a plan can leave their values out); this file marks what goes back.
      return new provproto.ConfigureResponse().setAcceptsecrets(true).setSupportspreview(false).setAcceptresources(false).setAcceptoutputs(false);
    }),

    check: unary(async (req: provproto.CheckRequest) => {
      const [, module] = moduleOf(req.getUrn());
      const news = plainWith(req.getNews(), req.getUrn());
      const result = await module.check(fromStruct(req.getOlds()), news);
      const resp = new provproto.CheckResponse().setInputs(toStruct(markSecret(result.inputs, news.__secrets ?? [])));
      return resp.setFailuresList(result.failures.map((f) => new provproto.CheckFailure().setProperty(f.property).setReason(f.reason)));
    }),
    diff: unary(async (req: provproto.DiffRequest) => {
      const [, module] = moduleOf(req.getUrn());
      const urn = req.getUrn();
      const result = await module.diff(req.getId(), plainWith(req.getOlds(), urn), plainWith(req.getNews(), urn));
      const resp = new provproto.DiffResponse()
        .setChanges(result.changes ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE)
        .setReplacesList(result.replaces)
        .setDeletebeforereplace(!!result.deleteBeforeReplace);
      const detailed = result.detailedDiff ?? {};
      const kinds: Record<string, provproto.PropertyDiff.Kind> = { add: 0, "add-replace": 1, delete: 2, "delete-replace": 3, update: 4, "update-replace": 5 };
      for (const [path, kind] of Object.entries(detailed)) resp.getDetaileddiffMap().set(path, new provproto.PropertyDiff().setKind(kinds[kind]));
      resp.setDiffsList([...new Set([...result.replaces, ...Object.keys(detailed).map((p) => p.split(/[.[]/)[0])])]);
      return resp.setHasdetaileddiff(result.detailedDiff !== undefined);
    }),
    create: unary(async (req: provproto.CreateRequest) => {
      const [token, module] = moduleOf(req.getUrn());
      const inputs = plainWith(req.getProperties(), req.getUrn());
      const result = await module.create(inputs).catch(partial((outs) => outputs(token, outs, inputs)));
      return new provproto.CreateResponse().setId(result.id).setProperties(outputs(token, result.outs, inputs));
    }),
    read: unary(async (req: provproto.ReadRequest) => {
      const [token, module] = moduleOf(req.getUrn());
      const props = plainWith(req.getProperties(), req.getUrn());
      const known = Object.keys(props).some((k) => !k.startsWith("__")); // none: an import
      const result = await module.read(req.getId(), known ? props : undefined);
      const resp = new provproto.ReadResponse();
      if (!result.id) return resp; // gone: the engine drops it
      resp.setId(result.id).setProperties(outputs(token, result.props ?? {}, props));
      return result.inputs ? resp.setInputs(toStruct(markSecret(result.inputs, props.__secrets ?? []))) : resp;
    }),
    update: unary(async (req: provproto.UpdateRequest) => {
      const [token, module] = moduleOf(req.getUrn());
      const urn = req.getUrn();
      const news = plainWith(req.getNews(), urn);
      const result = await module.update(req.getId(), plainWith(req.getOlds(), urn), news).catch(partial((outs) => outputs(token, outs, news)));
      return new provproto.UpdateResponse().setProperties(outputs(token, result.outs, news));
    }),
    delete: unary(async (req: provproto.DeleteRequest) => {
      const [, module] = moduleOf(req.getUrn());
      await module.delete(req.getId(), plainWith(req.getProperties(), req.getUrn()));
      return new emptyproto.Empty();
    }),
    invoke: unary(async (req: provproto.InvokeRequest) => {
      const run = FUNCTIONS[req.getTok()];
      if (!run || !results[req.getTok()]) throw new Error(`unknown function ${req.getTok()}`);
      const args = (req.getArgs()?.toJavaScript() ?? {}) as Props;
      const result = { [results[req.getTok()]]: await run(unwrapSecrets(args)) };
      // What a secret argument selected is secret too.
      return new provproto.InvokeResponse().setReturn(toStruct(secretKeys(args).length ? markSecret(result, Object.keys(result)) : result));
    }),
  };
}

/**
 * A unary handler: the answer, or the error as Pulumi shows it (one line; a partial create or update
 * keeps its object), scrubbed of every credential of the process whatever made it.
 */
function unary<Req, Res>(handle: (req: Req) => Promise<Res>) {
  return (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => {
    handle(call.request).then(
      (res) => callback(null, res),
      (e: Error & { grpc?: Partial<grpc.StatusObject> }) => callback(e.grpc ? { ...e.grpc, details: scrub(e.grpc.details ?? "") } : { code: grpc.status.UNKNOWN, details: scrub(String(e?.message ?? e)) }),
    );
  };
}

function unimplemented(what: string) {
  return (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback({ code: grpc.status.UNIMPLEMENTED, details: `${what} is not implemented by pulumi-resource-accessctl` });
}

/**
 * A create or update that failed after its object came to exist (the error carries `id` and the
 * outputs as `properties`, as provider/ownership.ts objectExists and the set's apply make it): sent
 * as ErrorResourceInitFailed, which the engine records as a partial create or update.
 */
function partial(outputs: (outs: Props) => structproto.Struct) {
  return (e: Error & { id?: string; properties?: Props; reasons?: string[] }): never => {
    if (!e.id) throw e;
    const message = scrub(e.message);
    const detail = new provproto.ErrorResourceInitFailed().setId(e.id).setProperties(outputs(e.properties ?? {})).setReasonsList((e.reasons ?? [e.message]).map(scrub));
    const any = new anyproto.Any();
    any.pack(detail.serializeBinary(), "pulumirpc.ErrorResourceInitFailed");
    const status = new statusproto.Status().setCode(grpc.status.UNKNOWN).setMessage(message);
    status.addDetails(any);
    const metadata = new grpc.Metadata();
    metadata.add("grpc-status-details-bin", Buffer.from(status.serializeBinary()));
    throw Object.assign(new Error(message), { grpc: { code: grpc.status.UNKNOWN, details: message, metadata } });
  };
}
