import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** A certificate and its key, as PEM. */
export interface Issued {
  cert: Buffer;
  key: Buffer;
}

/** A throw-away CA in `dir` that issues P-256 certificates with openssl. */
export interface TestCa extends Issued {
  /** The CA certificate's file. */
  certFile: string;
  /** A server certificate for 127.0.0.1 and `names`. */
  server(file: string, names?: string[]): Issued;
  /** A client certificate with this common name. */
  client(file: string, commonName: string): Issued;
}

const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

function openssl(args: string[]): void {
  execFileSync("openssl", args, { stdio: "ignore" });
}

export function createTestCa(dir: string, name: string): TestCa {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  openssl(
    ["req", "-x509", ...EC_KEY, "-keyout", keyFile, "-out", certFile, "-days", "1", "-subj", `/CN=${name}`]
      .concat(["-addext", "basicConstraints=critical,CA:TRUE"])
      .concat(["-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"]),
  );
  const issue = (file: string, subject: string, ...ext: string[]): Issued => {
    const [cert, key] = [join(dir, `${file}.crt`), join(dir, `${file}.key`)];
    openssl(
      ["req", "-x509", "-CA", certFile, "-CAkey", keyFile, ...EC_KEY, "-keyout", key, "-out", cert, "-days", "1"]
        .concat(["-subj", subject, "-addext", "basicConstraints=critical,CA:FALSE"])
        .concat(ext.flatMap((e) => ["-addext", e])),
    );
    return { cert: readFileSync(cert), key: readFileSync(key) };
  };
  return {
    cert: readFileSync(certFile),
    key: readFileSync(keyFile),
    certFile,
    server: (file, names = []) =>
      issue(
        file,
        "/CN=test-server",
        `subjectAltName=IP:127.0.0.1,DNS:localhost${names.map((n) => `,DNS:${n}`).join("")}`,
        "extendedKeyUsage=serverAuth",
      ),
    client: (file, commonName) => issue(file, `/CN=${commonName}`, "extendedKeyUsage=clientAuth"),
  };
}
