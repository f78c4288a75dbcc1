// Runs the benchmark's reference SQL (read_json + UNNEST into the snapshot tables) on the
// DuckDB release that @duckdb/node-api bundles, so BenchmarkRebuild can compare the rebuild
// with a current engine as well as with the DuckDB linked into sitewatch.
//
// Usage: node duckdb_node_bench.mjs <plan.json>
// plan.json: {"database": path, "setup": [sql...], "load": [sql...], "reps": n, "count": sql}
// It runs setup once, then the load statements reps times, each rep in one transaction, then
// count (one number: the rows loaded), and prints one JSON line:
// {"version": "v1.x.y", "ms": [ms per rep], "rows": n}.
// @duckdb/node-api is resolved through NODE_PATH (the benchmark's npm cache).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { DuckDBInstance, version } = require("@duckdb/node-api");

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const instance = await DuckDBInstance.create(plan.database);
const conn = await instance.connect();
for (const sql of plan.setup ?? []) {
  await conn.run(sql);
}
const ms = [];
for (let rep = 0; rep < plan.reps; rep++) {
  const start = process.hrtime.bigint();
  await conn.run("BEGIN TRANSACTION");
  for (const sql of plan.load) {
    await conn.run(sql);
  }
  await conn.run("COMMIT");
  ms.push(Number(process.hrtime.bigint() - start) / 1e6);
}
const counted = await conn.runAndReadAll(plan.count);
const rows = Number(counted.getRows()[0][0]);
console.log(JSON.stringify({ version: version(), ms, rows }));
