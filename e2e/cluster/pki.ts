import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { PrerequisiteError } from "./toolchain.js";

const run = promisify(execFile);

/** Files of the throw-away PKI of one control plane. */
export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  /** Client certificate of the cluster admin (group system:masters). */
  adminCert: string;
  adminKey: string;
  /** RSA key pair that signs and verifies ServiceAccount tokens. */
  serviceAccountKey: string;
  serviceAccountPub: string;
}

const DAYS = "30";
const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

async function openssl(args: string[]): Promise<void> {
  try {
    await run("openssl", args);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      throw new PrerequisiteError("openssl is not installed: run `make deps`");
    }
    throw new Error(`openssl ${args[0]} failed`, { cause: err });
  }
}

/**
 * Creates a CA, a serving certificate for the API server on loopback, an admin client certificate and the
 * ServiceAccount signing key pair, with openssl. P-256 keys keep this well under a second.
 */
export async function createPki(dir: string, serviceIp: string): Promise<Pki> {
  await mkdir(dir, { recursive: true });
  const f = (name: string): string => join(dir, name);
  const pki: Pki = {
    caCert: f("ca.crt"),
    caKey: f("ca.key"),
    servingCert: f("apiserver.crt"),
    servingKey: f("apiserver.key"),
    adminCert: f("admin.crt"),
    adminKey: f("admin.key"),
    serviceAccountKey: f("sa.key"),
    serviceAccountPub: f("sa.pub"),
  };
  const issue = (subject: string, key: string, cert: string, ...ext: string[]): Promise<void> =>
    openssl(
      ["req", "-x509", "-CA", pki.caCert, "-CAkey", pki.caKey, ...EC_KEY, "-keyout", key, "-out", cert, "-days", DAYS]
        .concat(["-subj", subject, "-addext", "basicConstraints=critical,CA:FALSE"])
        .concat(ext.flatMap((e) => ["-addext", e])),
    );
  const serviceAccountKeys = openssl([
    "genpkey",
    "-algorithm",
    "RSA",
    "-pkeyopt",
    "rsa_keygen_bits:2048",
    "-out",
    pki.serviceAccountKey,
  ]).then(() => openssl(["pkey", "-in", pki.serviceAccountKey, "-pubout", "-out", pki.serviceAccountPub]));
  await openssl(
    ["req", "-x509", ...EC_KEY, "-keyout", pki.caKey, "-out", pki.caCert, "-days", DAYS]
      .concat(["-subj", "/CN=canaryapp-test-ca", "-addext", "basicConstraints=critical,CA:TRUE"])
      .concat(["-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"]),
  );
  const names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"];
  await Promise.all([
    issue(
      "/CN=kube-apiserver",
      pki.servingKey,
      pki.servingCert,
      `subjectAltName=IP:127.0.0.1,IP:${serviceIp},DNS:localhost,${names.map((n) => `DNS:${n}`).join(",")}`,
      "extendedKeyUsage=serverAuth",
      "keyUsage=critical,digitalSignature,keyEncipherment",
    ),
    issue(
      "/O=system:masters/CN=canaryapp-admin",
      pki.adminKey,
      pki.adminCert,
      "extendedKeyUsage=clientAuth",
      "keyUsage=critical,digitalSignature",
    ),
    serviceAccountKeys,
  ]);
  return pki;
}
