// Checks Kubernetes manifests two ways with kubernetes-models (the Kubernetes API's OpenAPI
// schemas, compiled): each object validates against its kind's schema (types, required fields,
// formats), and, written out as a TypeScript literal of its kind's interface, type-checks under
// tsc, whose excess-property check catches misspelt field names, which the schemas allow.
// usage: node validate.mjs MANIFEST.yaml...   (exit 1 on any problem, each printed)
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import yaml from "js-yaml";

const kinds = {
  "apps/v1 Deployment": "apps/v1/Deployment",
  "v1 Service": "v1/Service",
  "v1 ConfigMap": "v1/ConfigMap",
  "v1 Secret": "v1/Secret",
};
let problems = 0, checked = 0, literals = "";
for (const file of process.argv.slice(2)) {
  const docs = yaml.loadAll(fs.readFileSync(file, "utf8"));
  for (const [i, doc] of docs.entries()) {
    const where = `${file} document ${i + 1} (${doc?.kind})`;
    const module = kinds[`${doc?.apiVersion} ${doc?.kind}`];
    if (!module) {
      console.log(`${where}: no check for ${doc?.apiVersion} ${doc?.kind}`);
      ++problems;
      continue;
    }
    const Kind = (await import(`kubernetes-models/${module}`))[doc.kind];
    try {
      new Kind(doc).validate();
    } catch (e) {
      console.log(`${where}: ${e.message}`);
      ++problems;
    }
    literals += `import type { I${doc.kind} as T${checked} } from "kubernetes-models/${module}";\n` +
                `export const doc${checked}: T${checked} = ${JSON.stringify(doc, null, 1)};\n`;
    ++checked;
  }
}
const typed = path.join(process.cwd(), "manifests.mts");
fs.writeFileSync(typed, literals);
try {
  execFileSync(path.join("node_modules", ".bin", "tsc"),
               ["--noEmit", "--strict", "--module", "node16", "--moduleResolution", "node16", typed], { stdio: "pipe" });
} catch (e) {
  console.log(`field names and types (tsc):\n${e.stdout}`);
  ++problems;
}
console.log(`${checked} object(s) checked, ${problems} problem(s)`);
process.exit(problems === 0 && checked > 0 ? 0 : 1);
