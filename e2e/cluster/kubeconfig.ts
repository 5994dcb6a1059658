import { readFile, writeFile } from "node:fs/promises";

/** What a kubeconfig needs to reach one API server as one user by client certificate. */
export interface KubeconfigInput {
  server: string;
  caCertFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  name: string;
  user: string;
}

/**
 * Writes a self-contained kubeconfig (certificates embedded, so it still works when copied elsewhere).
 * It is JSON, which every kubeconfig reader accepts as YAML.
 */
export async function writeKubeconfig(path: string, input: KubeconfigInput): Promise<void> {
  const b64 = async (file: string): Promise<string> => (await readFile(file)).toString("base64");
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: input.name,
        cluster: { server: input.server, "certificate-authority-data": await b64(input.caCertFile) },
      },
    ],
    users: [
      {
        name: input.user,
        user: {
          "client-certificate-data": await b64(input.clientCertFile),
          "client-key-data": await b64(input.clientKeyFile),
        },
      },
    ],
    contexts: [{ name: input.name, context: { cluster: input.name, user: input.user } }],
    "current-context": input.name,
  };
  await writeFile(path, JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
}
