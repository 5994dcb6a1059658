import dockerReference from "@swimlane/docker-reference";

/**
 * Image references as the container runtime resolves them: `app:v3`, `docker.io/library/app:v3` and
 * `docker.io/library/app:v3@sha256:…` name the same repository (default registry docker.io, `library/`
 * for a single-name repository, tag `latest` when neither a tag nor a digest is given).
 */
export interface ImageName {
  /** `docker.io/library/app` */
  repository: string;
  tag?: string;
  /** `sha256:…` */
  digest?: string;
}

const DIGEST = /^sha256:[a-f0-9]{64}$/;

/** The normalised parts of a reference; undefined when it is not a valid reference. */
export function parseImage(reference: string): ImageName | undefined {
  try {
    const ref = dockerReference.parseFamiliarName(reference);
    const repository = `${ref.domain ?? "docker.io"}/${ref.repository ?? ""}`;
    const tag = ref.tag ?? (ref.digest === undefined ? "latest" : undefined);
    return {
      repository,
      ...(tag !== undefined ? { tag } : {}),
      ...(ref.digest !== undefined ? { digest: ref.digest } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The one spelling of a reference (`docker.io/library/app:v3`); the reference itself when it does not parse. */
export function normaliseImage(reference: string): string {
  const name = parseImage(reference);
  if (name === undefined) return reference;
  return `${name.repository}${name.tag !== undefined ? `:${name.tag}` : ""}${name.digest !== undefined ? `@${name.digest}` : ""}`;
}

/**
 * The registry digest in a container status' `imageID`: `docker-pullable://app@sha256:…` (dockershim),
 * `docker.io/library/app@sha256:…` (containerd, CRI-O). A bare `sha256:…` is the local image's config ID,
 * which no registry serves: it is not a digest to pin to, and gives undefined, as an empty imageID does.
 */
export function digestOfImageID(imageID: string | undefined): string | undefined {
  if (imageID === undefined) return undefined;
  const at = imageID.lastIndexOf("@");
  if (at < 0) return undefined;
  const digest = imageID.slice(at + 1);
  return DIGEST.test(digest) ? digest : undefined;
}

/**
 * The user's reference pinned to `digest`, in the user's spelling: `app:v3` → `app@sha256:…` (the tag
 * dropped: with a digest the runtime ignores it, and it would only suggest the tag is what runs).
 */
export function pinImage(reference: string, digest: string): string {
  const withoutDigest = reference.split("@")[0] ?? reference;
  const slash = withoutDigest.lastIndexOf("/");
  const colon = withoutDigest.lastIndexOf(":");
  const repository = colon > slash ? withoutDigest.slice(0, colon) : withoutDigest;
  return `${repository}@${digest}`;
}

/**
 * Whether two references name the same build: the same normalised repository and tag, or the same
 * repository and digest (a digest given in a reference, or `digests` known for each, e.g. from pods).
 */
export function sameImage(a: string, b: string, digests: { a?: string; b?: string } = {}): boolean {
  if (normaliseImage(a) === normaliseImage(b)) return true;
  const left = parseImage(a);
  const right = parseImage(b);
  if (left === undefined || right === undefined || left.repository !== right.repository) return false;
  const da = left.digest ?? digests.a;
  const db = right.digest ?? digests.b;
  return da !== undefined && da === db;
}
