// duckdb_schema.mjs - what DuckDB's CSV sniffer makes of each file: reads
// file paths (one a line) on stdin and prints one JSON object a line:
//   {"file", "columns": [{"name", "type"}], "rows", "delimiter", "header"}
// or {"file", "error"} when read_csv refuses it.  Defaults throughout
// (read_csv with auto-detection), one thread, as the comparison asks;
// DUCK_NULLSTR (a JSON array of strings) sets read_csv's nullstr instead.
import { DuckDBInstance } from '@duckdb/node-api';
import { createInterface } from 'node:readline';

const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
const lit = (s) => `'${s.replaceAll("'", "''")}'`;
const nullstr = process.env.DUCK_NULLSTR
	? `, nullstr = [${JSON.parse(process.env.DUCK_NULLSTR).map(lit).join(', ')}]` : '';
const src = (file) => `read_csv(${lit(file)}${nullstr})`;

for await (const file of createInterface({ input: process.stdin })) {
	if (file === '')
		continue;
	const out = { file };
	try {
		const d = await con.runAndReadAll(`DESCRIBE SELECT * FROM ${src(file)}`);
		out.columns = d.getRows().map((c) => ({ name: String(c[0]), type: String(c[1]) }));
		const n = await con.runAndReadAll(`SELECT count(*) FROM ${src(file)}`);
		out.rows = Number(n.getRows()[0][0]);
		const s = await con.runAndReadAll(`SELECT Delimiter, HasHeader FROM sniff_csv(${lit(file)})`);
		const [delim, header] = s.getRows()[0];
		out.delimiter = String(delim);
		out.header = Boolean(header);
	} catch (e) {
		out.error = String(e.message).split('\n')[0];
	}
	console.log(JSON.stringify(out));
}
