// Apply amem-db's migration plan (as printed by `amem-db migrate --sql`) to an
// embedded engine from Node.js, then call stored functions with raw SurrealQL.
// Usage: node raw_surrealql.mjs PLAN.surql CALLS.json  -> prints JSON results
import { Surreal } from "surrealdb";
import { createNodeEngines } from "@surrealdb/node";
import { readFileSync } from "node:fs";

const [planPath, callsPath] = process.argv.slice(2);
const db = new Surreal({ engines: createNodeEngines() });
await db.connect("mem://");
await db.use({ namespace: "amem", database: "main" });
// one transaction per script, exactly as the migrator sends them
for (const txn of readFileSync(planPath, "utf8").split(/\n(?=BEGIN TRANSACTION;)/)) {
  await db.query(txn);
}
const results = [];
for (const { sql, vars } of JSON.parse(readFileSync(callsPath, "utf8"))) {
  const [value] = await db.query(sql, vars);
  results.push(value);
}
console.log(JSON.stringify({ version: await db.version(), results }));
await db.close();
process.exit(0); // the native engine keeps the event loop alive otherwise
