// Validates Kubernetes manifests (YAML documents on stdin) with
// kubernetes-models, which checks each object against the Kubernetes API's
// OpenAPI schema offline, and reports fields the API does not define (as
// `kubectl apply --validate=strict` would), read from the models' type
// declarations. Prints "N valid" or one line per problem and exits 1.
// Usage: node validate.mjs < manifests.yaml
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';

const require = createRequire(import.meta.url);
const root = dirname(require.resolve('kubernetes-models/package.json'));
const modules = dirname(root);
const problems = [];
let valid = 0;

// fields returns the properties of the first interface in a .d.ts file:
// name -> the .d.ts file of its object type (element type for arrays), or null.
const cache = new Map();
function fields(file) {
  if (cache.has(file)) return cache.get(file);
  const src = readFileSync(file, 'utf8');
  const imports = new Map();
  for (const m of src.matchAll(/import \{ (\w+) \} from "([^"]+)";/g)) {
    const spec = m[2].replace(/\.js$/, '');
    imports.set(m[1], spec.startsWith('.') ? join(dirname(file), spec + '.d.ts') : join(modules, spec + '.d.ts'));
  }
  const body = src.slice(src.indexOf('export interface'), src.indexOf('\n}', src.indexOf('export interface')));
  const props = new Map();
  for (const m of body.matchAll(/^ {4}"([^"]+)"\??: (.*)$/gm)) {
    const t = m[2].match(/^(?:Array<)?(\w+)>?;$/);
    props.set(m[1], t && imports.has(t[1]) ? imports.get(t[1]) : null);
  }
  cache.set(file, props);
  return props;
}

function strict(value, file, path) {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) return value.forEach((v, i) => strict(v, file, `${path}/${i}`));
  const props = fields(file);
  for (const [k, v] of Object.entries(value)) {
    if (!props.has(k)) problems.push(`${path}/${k}: unknown field`);
    else if (props.get(k)) strict(v, props.get(k), `${path}/${k}`);
  }
}

const docs = parseAllDocuments(readFileSync(0, 'utf8'));
for (const [i, doc] of docs.entries()) {
  if (doc.errors.length) {
    problems.push(`document ${i}: ${doc.errors[0].message}`);
    continue;
  }
  const obj = doc.toJS();
  const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
  const dir = group ? `${group}/${version}` : version;
  const { [obj.kind]: Model } = await import(`kubernetes-models/${dir}/${obj.kind}`);
  const before = problems.length;
  strict(obj, join(root, dir, `${obj.kind}.d.ts`), `${obj.kind} ${obj.metadata?.name}`);
  try {
    new Model(obj).validate();
  } catch (e) {
    problems.push(`${obj.kind} ${obj.metadata?.name}: ${e.message}`);
  }
  if (problems.length === before) valid++;
}
for (const p of problems) console.log(p);
if (problems.length) process.exit(1);
console.log(`${valid} valid`);
