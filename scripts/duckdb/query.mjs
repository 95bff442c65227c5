// Runs one SQL statement with DuckDB (@duckdb/node-api) and prints each
// result row as a JSON array on its own line; BIGINT and other values JSON
// cannot hold are printed as strings. Usage: node query.mjs 'SELECT ...'
import { DuckDBInstance } from '@duckdb/node-api';

const sql = process.argv[2];
if (!sql) {
  console.error('usage: node query.mjs SQL');
  process.exit(2);
}
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const reader = await conn.runAndReadAll(sql);
for (const row of reader.getRowsJS()) {
  console.log(JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? v.toString() : v instanceof Date ? v.toISOString() : v)));
}
