/**
 * Bundles the dashboard's page (src/dashboard/page/) with esbuild into dist/src/dashboard/page/: index.html,
 * app.js (Preact, uPlot and the page's code, minified), app.css, and licenses.txt (the licenses of the libraries
 * bundled, which the page links to). Everything the page loads is in the package: no CDN, so it works offline.
 * `make build` and `npm run build` run it after tsc.
 *
 * A file is written only when its content changed (as tsc's incremental build does): a build while a dashboard
 * serves these files (`make test` runs e2e tests beside commands that build) does not rewrite them under it.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { build } from "esbuild";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";

const root = findRepoRoot();
const source = join(root, "src", "dashboard", "page");
const out = join(root, "dist", "src", "dashboard", "page");
/** The packages bundled into app.js; their licenses ask for their notices to travel with them. */
const BUNDLED = ["preact", "uplot"];

/** Writes `content` to `path` unless the file already holds it; says whether it wrote. */
async function update(path: string, content: Uint8Array): Promise<boolean> {
  const old = await readFile(path).catch(() => undefined);
  if (old !== undefined && Buffer.compare(old, content) === 0) return false;
  await writeFile(path, content);
  return true;
}

await mkdir(out, { recursive: true });
const result = await build({
  entryPoints: { app: join(source, "main.tsx") },
  outdir: out,
  write: false,
  bundle: true,
  format: "esm",
  target: ["chrome115", "firefox115", "safari16"],
  minify: true,
  sourcemap: true,
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "linked",
  logLevel: "warning",
});
const notices = await Promise.all(
  BUNDLED.map(async (name) => {
    const pkg = JSON.parse(await readFile(join(root, "node_modules", name, "package.json"), "utf8")) as {
      version: string;
      license: string;
    };
    const license = await readFile(join(root, "node_modules", name, "LICENSE"), "utf8");
    return `${name} ${pkg.version} (${pkg.license})\n\n${license.trim()}\n`;
  }),
);
const files: [string, Uint8Array][] = [
  ...result.outputFiles.map((f): [string, Uint8Array] => [f.path, f.contents]),
  [join(out, "index.html"), await readFile(join(source, "index.html"))],
  [join(out, "licenses.txt"), Buffer.from(notices.join(`\n${"-".repeat(72)}\n\n`))],
];
const written: string[] = [];
for (const [path, content] of files) if (await update(path, content)) written.push(basename(path));
const sizes = result.outputFiles
  .filter((f) => !f.path.endsWith(".map"))
  .map((f) => `${basename(f.path)} ${Math.round(f.contents.length / 1024)} KiB`);
console.log(
  `dashboard page: ${sizes.join(", ")}; ${written.length > 0 ? `written: ${written.join(", ")}` : "unchanged"}`,
);
