/**
 * How text from elsewhere appears in the controller's messages (status, Events, logs): printable and short
 * whatever a server or an app's author wrote, and URLs without the credentials or query they may carry.
 */

/** Longest error message an outcome carries into status and Events. */
export const STATUS_MESSAGE_MAX = 240;

/** Printable ASCII only, whitespace collapsed, at most `max` characters. */
export function shortText(text: string, max = 80): string {
  const clean = text
    .replace(/[^\x20-\x7e]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return clean.length <= max ? clean : `${clean.slice(0, max - 1)}…`;
}

/** The endpoint as it may appear in messages and logs: no user info, no query string. */
export function safeEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    url.username = "";
    url.password = "";
    url.search = "";
    url.hash = "";
    return url.toString().replace(/\/$/, "");
  } catch {
    return "(invalid URL)";
  }
}
