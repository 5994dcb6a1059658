/**
 * The CA certificates that verify the API server (and a proxy), chosen as kubectl chooses them: the kubeconfig's,
 * else the system's store, never Node's own bundle.
 */
import type { TlsSettings } from "./kubeconfig.js";

// Taken as a CommonJS object, as node:http(s) are in src/kube/rest.ts (ADR 0017).
const nodeTls = process.getBuiltinModule("node:tls");

/** Where the roots that verify the API server's certificate come from (see {@link serverRoots}). */
export type RootsSource = "kubeconfig" | "system" | "none: insecure-skip-tls-verify";

type CertificateStore = (type: "system" | "extra") => string[];
const nodeStore: CertificateStore = (type) => nodeTls.getCACertificates(type);

/**
 * The system's CA certificates (Go reads them from the same places OpenSSL does, SSL_CERT_FILE and SSL_CERT_DIR
 * included) and Node's NODE_EXTRA_CA_CERTS; never Node's own bundle of Mozilla roots, which kubectl would not
 * trust. An empty store is an error (Go's "failed to load system roots") that says how to fix it.
 */
export function systemRoots(verifying: string, certificates: CertificateStore = nodeStore, orElse = ""): string[] {
  const ca = [...certificates("system"), ...certificates("extra")];
  if (ca.length === 0) {
    throw new Error(
      `no CA certificates to verify ${verifying} with: the system's store is empty (read from SSL_CERT_FILE ` +
        `or OpenSSL's default file, and SSL_CERT_DIR or its default folder) and NODE_EXTRA_CA_CERTS names ` +
        `none. Install the system's CA certificates (e.g. the ca-certificates package), point SSL_CERT_FILE ` +
        `at a PEM bundle${orElse}`,
    );
  }
  return ca;
}

/**
 * The CA certificates that verify the API server, as kubectl chooses them: the kubeconfig's CA when it names
 * one; else, unless it skips verification, the {@link systemRoots}.
 */
export function serverRoots(
  tls: TlsSettings,
  server: string,
  certificates: CertificateStore = nodeStore,
): { ca?: Buffer | string[]; source: RootsSource } {
  if (tls.ca !== undefined) return { ca: tls.ca, source: "kubeconfig" };
  if (!tls.rejectUnauthorized) return { source: "none: insecure-skip-tls-verify" };
  const orElse = ", or set certificate-authority(-data) for the cluster in the kubeconfig";
  return { ca: systemRoots(server, certificates, orElse), source: "system" };
}
