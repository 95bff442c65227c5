// Validates recorded answers of the read API against its OpenAPI 3.0
// description with Ajv (nullable as OpenAPI defines it, formats from
// ajv-formats), and checks that the description is complete: every object
// schema lists its required keys and says whether others may appear.
// Usage: node validate.mjs openapi.yaml answers.json, answers being
// [{"route": "/v1/runs", "method": "get", "status": 200, "body": {...}}].
// Prints one line per problem and exits 1 if there is any.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { parse } from "yaml";

const [docFile, answersFile] = process.argv.slice(2);
if (!answersFile) {
  console.error("usage: node validate.mjs openapi.yaml answers.json");
  process.exit(2);
}
const doc = parse(readFileSync(docFile, "utf8"));
const problems = [];

(function complete(node, at) {
  if (node === null || typeof node !== "object") return;
  if (node.type === "object" && (!("additionalProperties" in node) || (node.properties && !node.required))) {
    problems.push(`${at}: an object schema without required and additionalProperties`);
  }
  for (const [k, v] of Object.entries(node)) complete(v, `${at}/${k}`);
})(doc.components.schemas, "#/components/schemas");
(function complete(paths) {
  for (const [path, item] of Object.entries(paths)) {
    for (const [status, r] of Object.entries(item.get.responses)) {
      if (r.content && !r.content["application/json"]?.schema) problems.push(`${path} ${status}: no schema`);
    }
  }
})(doc.paths);

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, "openapi");
const pointer = (...parts) => parts.map((p) => encodeURIComponent(String(p).replace(/~/g, "~0").replace(/\//g, "~1"))).join("/");
for (const a of JSON.parse(readFileSync(answersFile, "utf8"))) {
  const name = `${a.method.toUpperCase()} ${a.route} ${a.status}`;
  let base = ["paths", a.route, a.method, "responses", String(a.status)];
  let resp = doc.paths[a.route]?.[a.method]?.responses?.[String(a.status)];
  if (!resp) {
    problems.push(`${name}: status not documented`);
    continue;
  }
  if (resp.$ref) base = resp.$ref.slice(2).split("/");
  const validate = ajv.compile({ $ref: "openapi#/" + pointer(...base, "content", "application/json", "schema") });
  if (!validate(a.body)) {
    for (const e of validate.errors) problems.push(`${name}: ${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`);
  }
}
for (const p of problems) console.log(p);
process.exit(problems.length ? 1 : 0);
