// Validates the Vega-Lite specs of `llmbench report` pages against Vega-Lite's own JSON Schema
// (web/node_modules/vega-lite/build/vega-lite-schema.json, the version the page embeds; Ajv, draft-07).
// Usage: node tests/schema/validate_charts.mjs REPORT.html...
// Prints "FILE: ok (N charts)" or one line per violation, "FILE: chart K (its element id): <JSON path>: <message>";
// exits 1 if a spec is invalid or a page has no charts, 2 on a usage error or an unreadable page.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";

const here = dirname(fileURLToPath(import.meta.url));
const webDir = process.env.LLMBENCH_WEB_DIR || join(here, "..", "..", "web");
const files = process.argv.slice(2);
if (files.length === 0 || files.some((f) => f.startsWith("-"))) {
  console.error("usage: node tests/schema/validate_charts.mjs REPORT.html...");
  process.exit(2);
}
let schema;
try {
  schema = JSON.parse(readFileSync(join(webDir, "node_modules", "vega-lite", "build", "vega-lite-schema.json"), "utf8"));
} catch (e) {
  console.error(`validate_charts.mjs: no Vega-Lite schema (run scripts/fetch-web-assets.sh): ${e.message}`);
  process.exit(2);
}
// Vega-Lite's schema uses keywords of its own (e.g. for its docs): not strict about unknown keywords;
// formats (uri, color-hex) are not checked.
const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
const validate = ajv.compile(schema);

let bad = false;
for (const file of files) {
  let charts;
  try {
    const html = readFileSync(file, "utf8");
    const m = html.match(/<script type="application\/json" id="llmbench-charts">([\s\S]*?)<\/script>/);
    if (!m) throw new Error("no llmbench-charts element");
    charts = JSON.parse(m[1]);
  } catch (e) {
    console.error(`${file}: ${e.message}`);
    process.exit(2);
  }
  if (!Array.isArray(charts) || charts.length === 0) {
    console.log(`${file}: no charts`);
    bad = true;
    continue;
  }
  let fileBad = false;
  charts.forEach((c, k) => {
    if (validate(c.spec)) return;
    fileBad = true;
    // anyOf failures list every branch; the deepest paths say most.
    const seen = new Set();
    for (const e of validate.errors) {
      const line = `${file}: chart ${k} (${c.id}): ${e.instancePath || "/"}: ${e.message}`;
      if (!seen.has(line)) console.log(line), seen.add(line);
    }
  });
  if (fileBad) bad = true;
  else console.log(`${file}: ok (${charts.length} charts)`);
}
process.exit(bad ? 1 : 0);
