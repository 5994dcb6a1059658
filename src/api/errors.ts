/**
 * A spec the controller cannot act on although the API server accepted it (e.g. a query template naming
 * an unknown variable, no Prometheus URL anywhere). Not retried: shown on the object until the spec changes.
 */
export class InvalidSpecError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "InvalidSpecError";
  }
}
