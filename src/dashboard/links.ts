/**
 * Where the page is: the overview, or one app by a deep link, `#/NAMESPACE/NAME` or the path
 * `/app/NAMESPACE/NAME` (the server answers both with the page). Pure, shared with the page (bundled into it).
 */

/** The app's key (`namespace/name`) the location names, or undefined for the overview. */
export function appOfLocation(location: { hash: string; pathname: string }): string | undefined {
  const hash = /^#\/([^/]+)\/([^/]+)\/?$/.exec(location.hash);
  if (hash !== null) return `${decodeURIComponent(hash[1] ?? "")}/${decodeURIComponent(hash[2] ?? "")}`;
  if (location.hash === "#/" || location.hash === "#") return undefined;
  const path = /^\/app\/([^/]+)\/([^/]+)\/?$/.exec(location.pathname);
  if (path !== null) return `${decodeURIComponent(path[1] ?? "")}/${decodeURIComponent(path[2] ?? "")}`;
  return undefined;
}

/** The deep link of an app. */
export function appLink(key: string): string {
  const [namespace = "", name = ""] = key.split("/");
  return `#/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
}
