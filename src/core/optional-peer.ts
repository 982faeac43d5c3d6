/**
 * Loading an optional peer dependency (the MCP SDK, node-llama-cpp, BullMQ with ioredis or pg):
 * imported on first use, so importing the entry that needs it stays cheap, and a package that is
 * not installed is a typed error naming it and the command that installs it. A failure inside an
 * installed package is left as it is.
 */
import { ForgeError } from "./errors.ts";

/** An optional peer: its package name and the major version forge-guardrails is built against. */
export interface OptionalPeer {
  name: string;
  major: number;
}

/** `npm install a@1 b@2`: the command that installs `peers` next to forge-guardrails. */
export function peerInstallCommand(peers: readonly OptionalPeer[]): string {
  return `npm install ${peers.map((peer) => `${peer.name}@${peer.major}`).join(" ")}`;
}

/**
 * Thrown when an optional peer dependency a feature needs is not installed. `missing` names the
 * packages that could not be loaded, `install` the command that installs what the feature needs.
 * Each feature throws its own subclass (`McpSdkMissingError`, `NodeLlamaCppMissingError`,
 * `BullmqMissingError`, `PostgresMissingError`).
 */
export class OptionalPeerMissingError extends ForgeError {
  /** The packages that could not be loaded. */
  readonly missing: readonly string[];
  /** The command that installs every package the feature needs. */
  readonly install: string;
  /**
   * @param peers every package the feature needs; @param missing those not installed;
   * @param neededFor what needs them ("the BullMQ run queue needs them"); @param note after the command.
   */
  constructor(
    peers: readonly OptionalPeer[],
    missing: readonly string[],
    neededFor: string,
    options?: ErrorOptions & { note?: string },
  ) {
    const install = peerInstallCommand(peers);
    const note = options?.note === undefined ? "" : ` (${options.note})`;
    super(
      `${missing.join(" and ")} ${missing.length === 1 ? "is" : "are"} not installed: ${neededFor}. Install ${peers.length === 1 ? "it" : "them"} next to forge-guardrails: ${install}${note}`,
      options,
    );
    this.missing = missing;
    this.install = install;
  }
}

/** Whether `error` is Node's "cannot find package '<name>'" (not a failure inside the package). */
export function isPeerMissing(error: unknown, name: string): boolean {
  if (!(error instanceof Error) || (error as NodeJS.ErrnoException).code !== "ERR_MODULE_NOT_FOUND") {
    return false;
  }
  return error.message.includes(`'${name}`) || error.message.includes(`"${name}`);
}

/**
 * Import optional peers together, one importer each (in `peers`' order). When any is not installed,
 * throws `missing(names, cause)`, naming every one that is not; any other failure is rethrown.
 * @example
 * const [bullmq, pg] = await importPeers(
 *   [{ name: "bullmq", major: 6, load: () => import("bullmq") }, { name: "pg", major: 8, load: () => import("pg") }],
 *   (missing, cause) => new PostgresMissingError(missing, { cause }),
 * );
 */
export async function importPeers<const T extends readonly unknown[]>(
  peers: { readonly [K in keyof T]: OptionalPeer & { load: () => Promise<T[K]> } },
  missing: (names: string[], cause: unknown) => Error,
): Promise<T> {
  const absent = new Set<string>();
  let cause: unknown;
  const loaded = await Promise.all(
    (peers as readonly (OptionalPeer & { load: () => Promise<unknown> })[]).map(async (peer) => {
      try {
        return await peer.load();
      } catch (error) {
        if (!isPeerMissing(error, peer.name)) throw error;
        absent.add(peer.name);
        cause ??= error;
        return undefined;
      }
    }),
  );
  if (absent.size > 0)
    throw missing(
      (peers as readonly OptionalPeer[]).filter((peer) => absent.has(peer.name)).map((peer) => peer.name),
      cause,
    );
  return loaded as unknown as T;
}
