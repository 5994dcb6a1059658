/**
 * Bundles the dashboard's page (src/dashboard/page/) with esbuild into dist/src/dashboard/page/: index.html,
 * app.js (Preact, uPlot and the page's code, minified), app.css, and licenses.txt (the licenses of the libraries
 * bundled, which the page links to). Everything the page loads is in the
 * package: no CDN, so it works offline. `make build` and `npm run build` run it after tsc.
 */
import { copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { build } from "esbuild";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";

const root = findRepoRoot();
const source = join(root, "src", "dashboard", "page");
const out = join(root, "dist", "src", "dashboard", "page");

await mkdir(out, { recursive: true });
const result = await build({
  entryPoints: { app: join(source, "main.tsx") },
  outdir: out,
  bundle: true,
  format: "esm",
  target: ["chrome115", "firefox115", "safari16"],
  minify: true,
  sourcemap: true,
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "linked",
  metafile: true,
  logLevel: "warning",
});
await copyFile(join(source, "index.html"), join(out, "index.html"));
/** The packages bundled into app.js; their licenses ask for their notices to travel with them. */
const BUNDLED = ["preact", "uplot"];
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
await writeFile(join(out, "licenses.txt"), notices.join(`\n${"-".repeat(72)}\n\n`));
const bytes = Object.entries(result.metafile.outputs)
  .filter(([file]) => !file.endsWith(".map"))
  .map(([file, o]) => `${file.split("/").pop() ?? file} ${Math.round(o.bytes / 1024)} KiB`);
console.log(`dashboard page: ${bytes.join(", ")}`);
