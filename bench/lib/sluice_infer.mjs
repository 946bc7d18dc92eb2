// sluice_infer.mjs SLUICE - `sluice infer` of each file: reads paths (one
// a line) on stdin, prints {"file", "schema"} or {"file", "error"} a line,
// as infer_compare.mjs reads them.
import { spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';

const bin = process.argv[2];
for await (const file of createInterface({ input: process.stdin })) {
	if (file === '')
		continue;
	const r = spawnSync(bin, ['infer', '--format', 'csv', file], { encoding: 'utf8' });
	console.log(JSON.stringify(r.status === 0 ? { file, schema: JSON.parse(r.stdout) }
	                                          : { file, error: r.stderr.trim() }));
}
