import * as pulumi from "@pulumi/pulumi";
import * as provider from "../provider/tls-edge-mutual-tls";
import { Reference } from "../provider/fields";
import * as operations from "../provider/bounded/tls-edge-mutual-tls";
import { PACKAGE, RESOURCES } from "../provider/resources";
import { DeclaresOutputs, entryOptions, ProviderOf, ResourceArgs, withOutputs } from "./args";
import { checkResource } from "./connection";

/** The arguments of a TlsEdgeMutualTls (see TlsEdgeMutualTlsInputs in provider/tls-edge-mutual-tls.ts). */
export type TlsEdgeMutualTlsArgs = ResourceArgs<provider.TlsEdgeMutualTlsInputs>;

/**
 * The mutual TLS module of a TLS edge. Creating it replaces whatever module the edge had (the API
 * sets the module as a whole), so an existing module is adopted by declaring its edge.
 * @example
 * const mtls = new accessctl.TlsEdgeMutualTls("edge", { edgeId:
 * "edgtls_…", certificateAuthorityIds: ["ca_…"], enabled: true });
 */
export class TlsEdgeMutualTls
  extends pulumi.dynamic.Resource
  implements DeclaresOutputs<typeof RESOURCES.TlsEdgeMutualTls>
{
  /** The TLS edge id (also the resource id). */
  declare public readonly edgeId: pulumi.Output<string>;
  /** Whether the module applies to traffic. */
  declare public readonly enabled: pulumi.Output<boolean>;
  /** The certificate authority ids, in order. */
  declare public readonly certificateAuthorityIds: pulumi.Output<string[]>;
  /** The certificate authorities as references. */
  declare public readonly certificateAuthorities: pulumi.Output<Reference[]>;
  /** The account profile, if any. */
  declare public readonly profile: pulumi.Output<string | undefined>;

  /**
   * The module of the existing edge `edgeId`, read-only: read from the API, nothing is changed or deleted.
   * @example
   * const live = accessctl.TlsEdgeMutualTls.get("live", "edgtls_…");
   */
  public static get(name: string, edgeId: pulumi.Input<string>, opts?: pulumi.CustomResourceOptions): TlsEdgeMutualTls {
    return new TlsEdgeMutualTls(name, {} as TlsEdgeMutualTlsArgs, { ...opts, id: edgeId });
  }

  constructor(name: string, args: TlsEdgeMutualTlsArgs, opts?: pulumi.CustomResourceOptions) {
    checkResource(
      "TlsEdgeMutualTls",
      name,
      opts,
      "declare the edge (edgeId) instead: creating the resource takes its module over as a whole",
    );
    const entry = RESOURCES.TlsEdgeMutualTls;
    super(
      operations satisfies ProviderOf<provider.TlsEdgeMutualTlsInputs, provider.TlsEdgeMutualTlsOutputs>,
      name,
      withOutputs(entry, args),
      entryOptions(entry, opts),
      PACKAGE,
      entry.name,
    );
  }
}
