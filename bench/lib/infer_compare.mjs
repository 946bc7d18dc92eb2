// infer_compare.mjs DUCK.jsonl SLUICE.jsonl - the three agreement figures of
// sluice's inferred schemas with DuckDB's sniffer, file by file.
//
// DUCK.jsonl is duckdb_schema.mjs's output; SLUICE.jsonl has one
// {"file", "schema": {columns, row_count}} or {"file", "error"} a line.
// Files DuckDB cannot read are left out (and listed).  Columns are paired
// by position; a column DuckDB has and sluice lacks (or a file sluice
// cannot read) counts as a disagreement of type and of name.
//   type agreement: same class, with INTEGER/BIGINT (and every integer
//     width) alike, DECIMAL/DOUBLE (and FLOAT) alike;
//   exact row count: sluice's row_count equals DuckDB's count(*);
//   name agreement: the same name, byte for byte.
// Prints the figures, then every disagreement (file: what).
import { readFileSync } from 'node:fs';

const load = (p) => new Map(readFileSync(p, 'utf8').split('\n').filter(Boolean)
	.map((l) => JSON.parse(l)).map((o) => [o.file, o]));
const [duckPath, oursPath, strip = ''] = process.argv.slice(2);
const duck = load(duckPath), ours = load(oursPath);

const cls = (t) => {
	t = t.toUpperCase();
	if (/^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/.test(t))
		return 'integer';
	if (/^(DECIMAL|DOUBLE|FLOAT|REAL)/.test(t))
		return 'decimal';
	if (t.startsWith('TIMESTAMP'))
		return 'timestamp';
	return t.toLowerCase();
};

let files = 0, rowsOk = 0, cols = 0, typeOk = 0, nameOk = 0;
const skipped = [], notes = [];
const short = (f) => (strip && f.startsWith(strip) ? f.slice(strip.length) : f);

for (const [file, d] of duck) {
	const o = ours.get(file);
	if (d.error) {
		skipped.push(`${short(file)}: DuckDB: ${d.error}`);
		continue;
	}
	files++;
	cols += d.columns.length;
	if (!o || o.error) {
		notes.push(`${short(file)}: sluice: ${o ? o.error : 'no result'}`);
		continue;
	}
	const s = o.schema, sc = s.columns;
	if (s.row_count === d.rows)
		rowsOk++;
	else
		notes.push(`${short(file)}: rows ${s.row_count} vs DuckDB ${d.rows}`);
	if (sc.length !== d.columns.length)
		notes.push(`${short(file)}: ${sc.length} columns vs DuckDB ${d.columns.length} (delimiter ${JSON.stringify(d.delimiter)}, header ${d.header})`);
	d.columns.forEach((dc, i) => {
		const c = sc[i];
		if (c && cls(c.inferred_type) === cls(dc.type))
			typeOk++;
		else if (c)
			notes.push(`${short(file)}: column ${i} ${JSON.stringify(dc.name)}: ${c.inferred_type} vs DuckDB ${dc.type}`);
		if (c && c.name === dc.name)
			nameOk++;
		else if (c)
			notes.push(`${short(file)}: column ${i} name ${JSON.stringify(c.name)} vs DuckDB ${JSON.stringify(dc.name)}`);
	});
}

const f3 = (n, d) => (d ? (n / d).toFixed(3) : 'n/a');
console.log(`files compared: ${files} (DuckDB could not read ${skipped.length}), columns: ${cols}`);
console.log(`column type agreement: ${f3(typeOk, cols)} (${typeOk}/${cols})`);
console.log(`exact row count:       ${f3(rowsOk, files)} (${rowsOk}/${files})`);
console.log(`column name agreement: ${f3(nameOk, cols)} (${nameOk}/${cols})`);
if (notes.length) {
	console.log(`\ndisagreements (${notes.length}):`);
	for (const n of notes)
		console.log(`  ${n}`);
}
if (skipped.length) {
	console.log(`\nleft out, DuckDB cannot read them (${skipped.length}):`);
	for (const n of skipped)
		console.log(`  ${n}`);
}
