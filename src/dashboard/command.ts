/**
 * `kubectl canaryapp dashboard`: wiring only. The plugin's connection (its kubeconfig, context and namespace,
 * src/cli/kube.ts), the watches (source.ts), the server (server.ts).
 */
import { Cluster, type ConnectionFlags } from "../cli/kube.js";
import { DashboardServer } from "./server.js";
import { DashboardSource } from "./source.js";

/** The default address: loopback only, the port Argo Rollouts' dashboard uses too. */
export const DEFAULT_ADDRESS = "127.0.0.1:3100";

/** `host:port`, `[::1]:port`, `:port` (loopback) or `port` alone. */
export function parseAddress(text: string): { host: string; port: number } {
  const match = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]]*):)?(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[2]);
  if (match === null || port > 65_535) {
    throw new Error(`invalid --address "${text}": use host:port, e.g. ${DEFAULT_ADDRESS}`);
  }
  const host = match[1] === undefined || match[1] === "" ? "127.0.0.1" : match[1].replace(/^\[(.*)\]$/, "$1");
  return { host, port };
}

export interface DashboardFlags extends ConnectionFlags {
  address: string;
  allNamespaces: boolean;
  readOnly: boolean;
}

export interface RunningDashboard {
  url: string;
  scope: string;
  stop(): Promise<void>;
}

/** Starts the watches and the server; resolves once it listens. */
export async function startDashboard(flags: DashboardFlags): Promise<RunningDashboard> {
  if (flags.allNamespaces && flags.namespace !== undefined) {
    throw new Error("--namespace and --all-namespaces exclude each other");
  }
  const { host, port } = parseAddress(flags.address);
  const cluster = new Cluster(flags);
  const namespace = flags.allNamespaces ? undefined : cluster.namespace;
  const scope = namespace === undefined ? "all namespaces" : `namespace ${namespace}`;
  const source = new DashboardSource({ clients: cluster.clients, namespace });
  const server = new DashboardServer({
    source,
    clients: cluster.clients,
    readOnly: flags.readOnly,
    scope,
    context: cluster.clients.kubeConfig.getCurrentContext(),
  });
  const url = await server.listen(host, port);
  source.start();
  return {
    url,
    scope,
    stop: async () => {
      await server.close();
      await source.stop();
    },
  };
}
