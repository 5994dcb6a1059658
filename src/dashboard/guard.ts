/**
 * Which requests the dashboard's server answers. It listens on the user's machine with the user's rights to the
 * cluster, so a page of another site open in the same browser must not be able to read it or press its buttons:
 *
 * - the Host header must name the address it listens on (a DNS-rebinding page would send its own host name);
 * - a control must be a POST of JSON (which another origin cannot send without a CORS preflight, which this
 *   server never grants) and, when the browser says where it comes from (Origin), come from the page itself.
 */

export interface RequestFacts {
  method: string;
  host: string | undefined;
  origin: string | undefined;
  contentType: string | undefined;
}

/**
 * The Host values the server answers to: the address it listens on, and localhost's names for it; undefined (any)
 * when it listens on every address (0.0.0.0, ::), whose names it cannot know.
 */
export function allowedHosts(host: string, port: number): Set<string> | undefined {
  if (host === "0.0.0.0" || host === "::" || host === "[::]") return undefined;
  const hosts = new Set([`${host}:${port}`]);
  if (host === "127.0.0.1" || host === "localhost" || host === "::1" || host === "[::1]") {
    for (const name of ["127.0.0.1", "localhost", "[::1]"]) hosts.add(`${name}:${port}`);
  }
  if (host.includes(":") && !host.startsWith("[")) hosts.add(`[${host}]:${port}`);
  return hosts;
}

/** Why a request is refused (status and text), or undefined when it may be answered. */
export function refusal(
  request: RequestFacts,
  hosts: ReadonlySet<string> | undefined,
  isControl: boolean,
): { status: number; message: string } | undefined {
  if (request.host === undefined) return { status: 400, message: "no Host header" };
  if (hosts !== undefined && !hosts.has(request.host.toLowerCase())) {
    return { status: 421, message: `this server answers to ${[...hosts].join(", ")}, not ${request.host}` };
  }
  if (!isControl) return undefined;
  if (request.method !== "POST") return { status: 405, message: "a control is a POST" };
  if (!(request.contentType ?? "").toLowerCase().startsWith("application/json")) {
    return { status: 415, message: "a control's body is JSON (Content-Type: application/json)" };
  }
  if (request.origin !== undefined && request.origin !== `http://${request.host.toLowerCase()}`) {
    return { status: 403, message: `a control from another origin (${request.origin}) is refused` };
  }
  return undefined;
}
