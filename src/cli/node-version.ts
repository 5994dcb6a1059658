/**
 * The Node.js the plugin needs, checked first thing (src/cli/main.ts), before anything that needs a newer Node is
 * imported: an older one would otherwise die with a stack trace from deep inside a dependency (undici's). This
 * file imports nothing, so that any Node that can load an ES module can run it.
 */

/** The oldest Node.js the plugin runs on: package.json's `engines.node` (a test keeps them equal). */
export const REQUIRED_NODE = "22.19";

function parts(version: string): number[] {
  return version
    .replace(/^v/, "")
    .split(/[.-]/)
    .slice(0, 3)
    .map((p) => Number.parseInt(p, 10) || 0);
}

/** Whether `version` (e.g. `20.11.1`, `v24.1.0`) is at least `required` (e.g. `22.19`). */
export function atLeast(version: string, required: string): boolean {
  const have = parts(version);
  const want = parts(required);
  for (let i = 0; i < 3; i++) {
    const h = have[i] ?? 0;
    const w = want[i] ?? 0;
    if (h !== w) return h > w;
  }
  return true;
}

/** One line saying what to do, when `version` is too old; undefined when it will do. */
export function nodeVersionProblem(version: string, required: string = REQUIRED_NODE): string | undefined {
  if (atLeast(version, required)) return undefined;
  return (
    `kubectl canaryapp needs Node.js ${required} or newer, and this is Node.js ${version.replace(/^v/, "")}: ` +
    `install a current LTS from nodejs.org (or \`nvm install 24\`) and put it first on PATH`
  );
}
