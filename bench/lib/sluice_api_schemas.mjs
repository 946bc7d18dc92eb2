// sluice_api_schemas.mjs URL TOKEN - each file uploaded through the API
// (POST /storage-explorer/storage/upload) and its schema read back (GET
// /storage-explorer/datasets/{id} once ready).  Reads "path<TAB>folder<TAB>
// name" lines on stdin; prints {"file", "schema"} or {"file", "error"} a
// line, as infer_compare.mjs reads them.  The stack is the local bench
// instance on loopback, with its self-signed certificate.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const [url, token] = process.argv.slice(2);
const auth = { Authorization: `Bearer ${token}` };
const BATCH_FILES = 20, BATCH_BYTES = 16 << 20, WAIT_MS = 600000;

const items = [];
for await (const line of createInterface({ input: process.stdin })) {
	if (line === '')
		continue;
	const [file, folder, name] = line.split('\t');
	items.push({ file, folder, name });
}

async function upload(batch) {
	const form = new FormData();
	for (const it of batch)
		form.append('file', new Blob([readFileSync(it.file)]), it.name);
	const r = await fetch(`${url}/storage-explorer/storage/upload?folder_path=${encodeURIComponent(batch[0].folder)}`,
	                      { method: 'POST', headers: auth, body: form });
	const j = await r.json();
	if (r.status !== 201)
		throw new Error(`upload: ${r.status} ${JSON.stringify(j)}`);
	for (const f of j.files)
		batch.find((it) => it.name === f.file_name).id = f.dataset_id;
}

// batches of one folder, bounded in files and bytes
let batch = [], bytes = 0;
for (const it of items) {
	const size = readFileSync(it.file).length;
	if (batch.length && (batch.length >= BATCH_FILES || bytes + size > BATCH_BYTES ||
	                     batch[0].folder !== it.folder)) {
		await upload(batch);
		batch = [];
		bytes = 0;
	}
	batch.push(it);
	bytes += size;
}
if (batch.length)
	await upload(batch);

const deadline = Date.now() + WAIT_MS;
for (const it of items) {
	for (;;) {
		const r = await fetch(`${url}/storage-explorer/datasets/${it.id}`, { headers: auth });
		const ds = await r.json();
		if (ds.status === 'ready') {
			console.log(JSON.stringify({ file: it.file, schema: ds.schema }));
			break;
		}
		if (ds.status === 'failed' || Date.now() > deadline) {
			console.log(JSON.stringify({ file: it.file, error: ds.error || `status ${ds.status}` }));
			break;
		}
		await new Promise((ok) => setTimeout(ok, 100));
	}
}
