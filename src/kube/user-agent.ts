import { readFileSync } from "node:fs";

/** The package.json next to `dist/`: the repository's, or the one the image copies beside `dist/src`. */
const PACKAGE_JSON = new URL("../../../package.json", import.meta.url);

/** The controller's version, from its package.json; "unknown" when that cannot be read. */
export function packageVersion(file: URL = PACKAGE_JSON): string {
  try {
    const { version } = JSON.parse(readFileSync(file, "utf8")) as { version?: unknown };
    return typeof version === "string" && version !== "" ? version : "unknown";
  } catch {
    return "unknown";
  }
}

/**
 * The User-Agent of a controller replica: `canaryapp/<version> (<identity>)`, the identity it holds Leases
 * under. The API server writes it into its audit log beside every request, so an operator (or a test) can tell
 * which replica made each write. Characters a header's comment may not carry are replaced by `_`.
 */
export function controllerUserAgent(identity: string, version: string = packageVersion()): string {
  return `canaryapp/${version} (${identity.replace(/[^\x20-\x7e]|[()\\]/g, "_")})`;
}
