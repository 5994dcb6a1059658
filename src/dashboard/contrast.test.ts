/**
 * The page's colours keep WCAG 2.x AA contrast: every rule of the stylesheet that sets a text colour reads at
 * 4.5:1 or more on the background it sets (the page's own where it sets none, and the grey panels where text
 * sits on them), and the focus ring stands out at 3:1 (non-text contrast). Measured by polished's WCAG
 * contrast ratio (`getContrast`), on the stylesheet as shipped.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { getContrast } from "polished";

const css = readFileSync(new URL("../../../src/dashboard/page/styles.css", import.meta.url), "utf8");

/** The custom properties of `:root`. */
const variables = new Map(
  [...(/:root\s*\{([^}]*)\}/.exec(css)?.[1] ?? "").matchAll(/(--[\w-]+):\s*([^;]+);/g)].map((m) => [
    m[1] ?? "",
    (m[2] ?? "").trim(),
  ]),
);

function resolve(value: string): string {
  const named = /^var\((--[\w-]+)\)$/.exec(value.trim());
  return named === null ? value.trim() : (variables.get(named[1] ?? "") ?? value);
}

/** Each rule with its selector and the declarations it makes (the outermost braces of a media query skipped). */
const rules = [...css.replace(/@media[^{]*\{/g, "").matchAll(/([^{}]+)\{([^{}]*)\}/g)].map((m) => ({
  selector: (m[1] ?? "").trim(),
  declarations: new Map(
    [...(m[2] ?? "").matchAll(/([\w-]+):\s*([^;]+);/g)].map((d) => [d[1] ?? "", resolve(d[2] ?? "")]),
  ),
}));

const contrast = (text: string, background: string): number => getContrast(text, background);

/** The backgrounds text is put on without its rule setting one: the page and its grey panels. */
const PAGE = resolve("var(--bg)");
const PANELS = ["#f6f6f6"];

test("the stylesheet is read: its colours and rules are found", () => {
  assert.ok(variables.size >= 10, `${variables.size} custom properties`);
  assert.ok(rules.filter((r) => r.declarations.has("color")).length >= 20);
});

test("every text colour reads at 4.5:1 or more on its background (WCAG AA)", () => {
  const weak: string[] = [];
  for (const { selector, declarations } of rules) {
    const text = declarations.get("color");
    if (text === undefined || text === "inherit") continue;
    const own = declarations.get("background");
    const backgrounds = own !== undefined && !own.startsWith("rgba") ? [own] : [PAGE, ...PANELS];
    for (const background of backgrounds) {
      const ratio = contrast(text, background);
      if (ratio < 4.5) weak.push(`${selector}: ${text} on ${background} is ${ratio.toFixed(2)}:1`);
    }
  }
  assert.deepEqual(weak, []);
});

test("the focus ring stands out from the page at 3:1 or more (non-text contrast)", () => {
  const ring = resolve("var(--focus)");
  assert.ok(contrast(ring, PAGE) >= 3, `${ring} on ${PAGE}`);
});
