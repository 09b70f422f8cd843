// Validates llmbench's JSON documents against the schemas in schemas/ (JSON Schema draft 2020-12, Ajv): results
// files by default, the others with --schema.
// Usage: node tests/schema/validate.mjs [--schema NAME] [--readable] [--quiet] FILE...
//   FILE: a JSON file (.json.gz is decompressed); - reads standard input.
//   --schema NAME: check against schemas/NAME.schema.json (results, gate-verdict, info, tokenize, generate,
//               serve-health, serve-models; docs/results-schema.md lists them); NAME#/$defs/X checks against one
//               of its definitions (serve-models#/$defs/model: the body of GET /v1/models/{id}). Default: results.
//   --readable: check against the results schema's #/$defs/readable (the version-1 format as gate and report read
//               it: older files and files written by hand may lack keys), not against the file the current
//               llmbench writes.
//   --quiet: print nothing for a valid file.
// Prints "FILE: ok" or one line per violation, "FILE: <JSON path>: <message>", e.g.
// "run.json: points[0].params.batch: must be integer"; exits 1 if any file is invalid, 2 on a usage error or a
// file that cannot be read or parsed.
import { readFileSync, readdirSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";

const here = dirname(fileURLToPath(import.meta.url));
const schemaDir = join(here, "..", "..", "schemas");
const usage = "usage: node tests/schema/validate.mjs [--schema NAME] [--readable] [--quiet] FILE...";

const args = process.argv.slice(2);
let readable = false, quiet = false, name = "results";
const files = [];
for (let i = 0; i < args.length; ++i) {
  const a = args[i];
  if (a === "--readable") readable = true;
  else if (a === "--quiet") quiet = true;
  else if (a === "--schema" && i + 1 < args.length) name = args[++i];
  else if (a === "-h" || a === "--help") {
    console.log(usage);
    process.exit(0);
  } else if (a.startsWith("--")) {
    console.error(`validate.mjs: unknown option ${a}`);
    process.exit(2);
  } else files.push(a);
}
if (files.length === 0) {
  console.error(usage);
  process.exit(2);
}
if (readable && name !== "results") {
  console.error("validate.mjs: --readable is a level of the results schema only");
  process.exit(2);
}

// allErrors: every violation of a file, not only the first. Strict mode (unknown keywords and the like are
// schema bugs), except strictTypes and strictRequired: the schema's "complete" layer and its if/then branches
// add `required` and bounds without repeating `type` and `properties` (#/$defs/readable types every value).
// Every schema is added (they refer to each other by $id, urn:llmbench:NAME.schema.json: info's env is the results
// file's).
let validate;
try {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
  for (const f of readdirSync(schemaDir).filter((f) => f.endsWith(".schema.json")).sort())
    ajv.addSchema(JSON.parse(readFileSync(join(schemaDir, f), "utf8")));
  const [stem, fragment = ""] = name.split("#");
  validate = ajv.getSchema(`urn:llmbench:${stem}.schema.json` + (fragment ? "#" + fragment : readable ? "#/$defs/readable" : ""));
} catch (err) {
  console.error(`validate.mjs: ${schemaDir}: ${err.message}`);
  process.exit(2);
}
if (!validate) {
  console.error(`validate.mjs: --schema ${name}: no such schema in ${schemaDir}`);
  process.exit(2);
}

// "/points/0/params/batch" -> "points[0].params.batch" (the paths llmbench's own readers print).
function jsonPath(pointer) {
  let out = "";
  for (const raw of pointer.split("/").slice(1)) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (/^[0-9]+$/.test(part)) out += `[${part}]`;
    else out += (out ? "." : "") + part;
  }
  return out || "(top level)";
}

function describe(e) {
  const p = e.params || {};
  switch (e.keyword) {
    case "required": return [jsonPath(e.instancePath + "/" + p.missingProperty), "missing"];
    case "additionalProperty":
    case "additionalProperties": return [jsonPath(e.instancePath + "/" + p.additionalProperty), "not in the schema (unknown key)"];
    case "unevaluatedProperties": return [jsonPath(e.instancePath + "/" + p.unevaluatedProperty), "not in the schema (unknown key)"];
    case "propertyNames": return [jsonPath(e.instancePath + "/" + p.propertyName), "key not allowed here"];
    case "enum": return [jsonPath(e.instancePath), `${e.message}: ${p.allowedValues.map((v) => JSON.stringify(v)).join(", ")}`];
    case "const": return [jsonPath(e.instancePath), `must be ${JSON.stringify(p.allowedValue)}`];
    case "false schema": return [jsonPath(e.instancePath), "not allowed here (e.g. a load key on a run point)"];
    default: return [jsonPath(e.instancePath), e.message];
  }
}

let status = 0;
for (const file of files) {
  let doc;
  try {
    let bytes = readFileSync(file === "-" ? 0 : file);
    if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
    doc = JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    console.log(`${file}: cannot read: ${err.message}`);
    status = Math.max(status, 2);
    continue;
  }
  if (validate(doc)) {
    if (!quiet) console.log(`${file}: ok`);
    continue;
  }
  status = Math.max(status, 1);
  const seen = new Set();
  const limit = 50;  // a file written by another tool can miss a key in every run: the first 50 say enough
  for (const e of validate.errors) {
    // A failed if/then/oneOf also reports the keyword itself; the errors under it say what is wrong.
    if (e.keyword === "if" || (e.keyword === "oneOf" && validate.errors.length > 1)) continue;
    const [path, what] = describe(e);
    const line = `${file}: ${path}: ${what}`;
    if (seen.has(line)) continue;
    seen.add(line);
    if (seen.size <= limit) console.log(line);
  }
  if (seen.size > limit) console.log(`${file}: ... and ${seen.size - limit} more`);
}
process.exit(status);
