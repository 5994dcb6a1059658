/**
 * Server-sent events (the WHATWG HTML standard, "Server-sent events": text/event-stream): the framing, pure,
 * and a stream over one HTTP response.
 */
import type { ServerResponse } from "node:http";

/**
 * One event as the stream carries it: `event:` names it, each line of the data is a `data:` line (a line
 * break inside the data would otherwise end the field), and a blank line dispatches it.
 */
export function frame(event: string, data: string): string {
  if (/[\r\n]/.test(event)) throw new Error(`SSE event name with a line break: ${JSON.stringify(event)}`);
  const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}`);
  return `event: ${event}\n${lines.join("\n")}\n\n`;
}

/** A comment line: ignored by the browser, it keeps idle proxies and the connection from timing out. */
export function comment(text: string): string {
  return `: ${text.replace(/[\r\n]+/g, " ")}\n\n`;
}

/** How often an idle stream sends a comment. */
export const HEARTBEAT_MS = 20_000;

/** An event stream over one response: the headers at once, events as JSON, heartbeats while idle. */
export class EventStream {
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly response: ServerResponse,
    onClose: () => void,
    heartbeatMs = HEARTBEAT_MS,
  ) {
    response.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      Connection: "keep-alive",
      // Reconnect soon after the server restarts (the browser's default is a few seconds).
    });
    response.write("retry: 1000\n\n");
    this.heartbeat = setInterval(() => this.response.write(comment("keep-alive")), heartbeatMs);
    this.heartbeat.unref();
    response.on("close", () => {
      this.closed = true;
      clearInterval(this.heartbeat);
      onClose();
    });
  }

  /** Sends `data` as JSON under `event`; nothing once the page has gone. */
  send(event: string, data: unknown): void {
    if (this.closed) return;
    this.response.write(frame(event, JSON.stringify(data)));
  }

  close(): void {
    clearInterval(this.heartbeat);
    this.response.end();
  }
}
