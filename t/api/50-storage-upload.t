#!/usr/bin/perl
# POST /storage-explorer/storage/upload: several files -> one upload history
# entry, one dataset each, schemas inferred by sluice work (CSV and JSON);
# re-upload; every refusal, with nothing left behind; a client that goes
# away mid-upload; permissions.

use strict;
use warnings;

use FindBin;
use Test::More;
use Time::HiRes qw(sleep time);

use SluiceTest;
use StorageTest;

my ($tok, $cid) = sx_customer('st-upload', sub => 'uploader@example.com');
my $ro = token(customer => 'st-upload', permissions => 'STORAGE_EXPLORER.READ');
my $dir = storage_dir($cid);
my $uuid_re = qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

sub counts {
	return mysql("SELECT (SELECT COUNT(*) FROM uploads WHERE customer_id = '$cid'), "
		     . "(SELECT COUNT(*) FROM datasets WHERE customer_id = '$cid')");
}

# --- several files, inferred ----------------------------------------------------

my $csv = "id,amount,name,day\n1,10.50,alpha,2026-01-02\n2,7.25,,2026-02-03\n"
	. "3,100.00,gamma,2026-03-04\n";
my $json = '[{"id": 1, "ok": true, "city": {"name": "Basel"}, "at": "2026-01-02 10:00:00"},'
	. ' {"id": 3000000000, "ok": false, "city": {"name": null}, "at": "2026-01-03 11:30:00"}]';
my $jsonl = qq({"k": "a", "v": 1.5}\n{"k": "b", "v": 2}\n);

my $res = upload($tok, 'incoming/2026', [ 'sales.csv', $csv ], [ 'events.json', $json ],
		 [ 'lines.ndjson', $jsonl ]);
json_response_is($res, 201, undef, 'upload of three files');
my $up = $res->{json};
is_deeply([ sort keys %$up ], [ sort qw(upload_id folder_path uploaded_at uploaded_by
	file_count total_size_bytes status files) ], '201 body: the history entry fields');
like($up->{upload_id}, $uuid_re, 'upload_id is a UUID');
is($up->{folder_path}, 'incoming/2026', 'folder_path');
is($up->{uploaded_by}, 'uploader@example.com', "uploaded_by is the token's sub");
iso_time_ok($up->{uploaded_at}, 'uploaded_at');
is($up->{file_count}, 3, 'file_count 3');
is($up->{total_size_bytes}, length($csv) + length($json) + length($jsonl), 'total_size_bytes');
is($up->{status}, 'processing', 'processing until inferred');
is_deeply([ map { [ @$_{qw(file_name file_size_bytes file_format file_path)} ] } @{ $up->{files} } ],
	  [ [ 'sales.csv', length $csv, 'csv', 'incoming/2026/sales.csv' ],
	    [ 'events.json', length $json, 'json', 'incoming/2026/events.json' ],
	    [ 'lines.ndjson', length $jsonl, 'json', 'incoming/2026/lines.ndjson' ] ],
	  'files: name, size, format, path, in order');
like($_->{dataset_id}, $uuid_re, "$_->{file_name}: dataset_id") for @{ $up->{files} };
is(slurp("$dir/incoming/2026/sales.csv"), $csv, 'sales.csv stored byte for byte');
is(slurp("$dir/incoming/2026/events.json"), $json, 'events.json stored byte for byte');
is_deeply([ partial_files($dir) ], [], 'no partial file left');
is(mysql("SELECT COUNT(*) FROM upload_files WHERE upload_id = '$up->{upload_id}'"), 3,
   'three upload_files rows');
is(mysql("SELECT GROUP_CONCAT(ref_id ORDER BY JSON_VALUE(payload, '\$.position')) FROM work_queue "
	 . "WHERE kind = 'storage_infer' AND JSON_VALUE(payload, '\$.upload_id') = '$up->{upload_id}'"),
   join(',', map { $_->{dataset_id} } @{ $up->{files} }), 'one storage_infer work item per dataset');

is(wait_upload($up->{upload_id}), 'completed', 'upload completed once every file is inferred');
my $sales = wait_dataset($tok, dataset_of($res, 'sales.csv'));
is($sales->{status}, 'ready', 'sales.csv: ready');
is_deeply($sales->{schema}, {
	columns => [
		{ name => 'id', inferred_type => 'INTEGER', nullable => JSON::PP::false, position => 0 },
		{ name => 'amount', inferred_type => 'DECIMAL', nullable => JSON::PP::false, position => 1,
		  precision => 5, scale => 2 },
		{ name => 'name', inferred_type => 'VARCHAR', nullable => JSON::PP::true, position => 2 },
		{ name => 'day', inferred_type => 'DATE', nullable => JSON::PP::false, position => 3 },
	],
	row_count => 3, analyzed_rows => 3,
}, 'sales.csv: schema (types, DECIMAL(5,2), nullability, positions, counts)')
	or diag explain $sales->{schema};
is($sales->{error}, undef, 'no error');
my $events = wait_dataset($tok, dataset_of($res, 'events.json'));
is($events->{status}, 'ready', 'events.json: ready');
is_deeply($events->{schema}, {
	columns => [
		{ name => 'id', inferred_type => 'BIGINT', nullable => JSON::PP::false, position => 0 },
		{ name => 'ok', inferred_type => 'BOOLEAN', nullable => JSON::PP::false, position => 1 },
		{ name => 'city.name', inferred_type => 'VARCHAR', nullable => JSON::PP::true, position => 2 },
		{ name => 'at', inferred_type => 'TIMESTAMP', nullable => JSON::PP::false, position => 3 },
	],
	row_count => 2, analyzed_rows => 2,
}, 'events.json: nested object flattened, BIGINT, BOOLEAN, TIMESTAMP')
	or diag explain $events->{schema};
my $lines = wait_dataset($tok, dataset_of($res, 'lines.ndjson'));
is($lines->{status}, 'ready', 'JSON lines: ready');
is_deeply([ map { "$_->{name}:$_->{inferred_type}" } @{ $lines->{schema}{columns} } ],
	  [ 'k:VARCHAR', 'v:DECIMAL' ], 'JSON lines: columns');
is($lines->{schema}{row_count}, 2, 'JSON lines: 2 rows');

my $h = sx(GET => '/storage-explorer/storage/uploads/history', $tok)->{json};
is($h->{uploads}[0]{upload_id}, $up->{upload_id}, 'the upload heads the history');
is($h->{uploads}[0]{status}, 'completed', 'history: completed');

# --- spreadsheets and Parquet, written by third-party writers (t/fixtures/storage) ---------

{
	my $fx = "$FindBin::Bin/../fixtures/storage/binary";
	my %want = (
		'types.xlsx' => [ 'excel', 6, 'id:INTEGER name:VARCHAR amount:DECIMAL(6,3) big:BIGINT ratio:DOUBLE '
				  . 'flag:BOOLEAN day:DATE at:TIMESTAMP us_day:DATE sparse:VARCHAR' ],
		'types.xls' => [ 'excel', 3, 'id:INTEGER name:VARCHAR price:DECIMAL(4,2) flag:INTEGER day:DATE '
				 . 'at:TIMESTAMP big:BIGINT' ],
		'types.parquet' => [ 'parquet', 3, 'i32:INTEGER i64:BIGINT d:DOUBLE f:DOUBLE b:BOOLEAN dt:DATE '
				     . 'ts:TIMESTAMP dec:DECIMAL(10,2) dec18:DECIMAL(18,4) dec38:DECIMAL(38,6) v:VARCHAR '
				     . 'small:INTEGER tiny:INTEGER u32:BIGINT' ],
	);
	my $r = upload($tok, 'binary', map { [ $_, slurp("$fx/$_") ] }
		       qw(types.xlsx types.xls types.parquet bad-magic.parquet));
	json_response_is($r, 201, undef, 'upload of XLSX, XLS and Parquet files');
	is(wait_upload($r->{json}{upload_id}), 'failed', 'the upload fails: one Parquet file is broken');
	for my $name (sort keys %want) {
		my ($fmt, $rows, $cols) = @{ $want{$name} };
		my ($f) = grep { $_->{file_name} eq $name } @{ $r->{json}{files} };
		is($f->{file_format}, $fmt, "$name: file_format $fmt");
		is($f->{file_size_bytes}, -s "$fx/$name", "$name: size");
		my $d = wait_dataset($tok, $f->{dataset_id});
		is($d->{status}, 'ready', "$name: ready") or diag explain $d;
		is(join(' ', map { "$_->{name}:$_->{inferred_type}"
				   . (defined $_->{precision} ? "($_->{precision},$_->{scale})" : '') }
			@{ $d->{schema}{columns} || [] }), $cols, "$name: columns and types");
		is($d->{schema}{row_count}, $rows, "$name: row_count $rows");
	}
	my $bad = wait_dataset($tok, dataset_of($r, 'bad-magic.parquet'));
	is($bad->{status}, 'failed', 'bad-magic.parquet: failed');
	is($bad->{error}, 'not a Parquet file: no PAR1 magic at the start', 'with the reader\'s reason');
	like(mysql("SELECT error FROM uploads WHERE id = '$r->{json}{upload_id}'"),
	     qr/^bad-magic\.parquet: not a Parquet file/, 'the upload keeps the reason');
}

# --- a file that cannot be inferred: the upload fails with a reason ------------------

$res = upload($tok, 'incoming/2026', [ 'ok.csv', "a\n1\n" ], [ 'broken.json', '[{"a": 1}, {"a":' ]);
json_response_is($res, 201, undef, 'upload with a malformed JSON file is accepted');
is(wait_upload($res->{json}{upload_id}), 'failed', 'the upload ends failed');
like(mysql("SELECT error FROM uploads WHERE id = '$res->{json}{upload_id}'"), qr/^broken\.json: \S/,
     'its reason names the file');
my $broken = wait_dataset($tok, dataset_of($res, 'broken.json'));
is($broken->{status}, 'failed', 'the dataset is failed');
like($broken->{error} // '', qr/\S/, 'with an error');
is($broken->{schema}, undef, 'and no schema');
is(wait_dataset($tok, dataset_of($res, 'ok.csv'))->{status}, 'ready', 'the other file is fine');

# --- re-upload: the file is replaced, the dataset kept and inferred again -------------

my $csv2 = "id,amount\n1,2\n2,3\n3,4\n4,5\n";
$res = upload($tok, 'incoming/2026/', [ 'sales.csv', $csv2 ]);
json_response_is($res, 201, undef, 're-upload of sales.csv (trailing slash on the folder)');
is($res->{json}{folder_path}, 'incoming/2026', 'folder_path without the trailing slash');
is(dataset_of($res, 'sales.csv'), $sales->{dataset_id}, 'same dataset id');
is(slurp("$dir/incoming/2026/sales.csv"), $csv2, 'file replaced');
my $again = wait_dataset($tok, $sales->{dataset_id});
is($again->{schema}{row_count}, 4, 're-inferred: 4 rows');
is_deeply([ map { $_->{name} } @{ $again->{schema}{columns} } ], [qw(id amount)], 're-inferred: columns');
is($again->{upload_id}, $res->{json}{upload_id}, 'the dataset points at the latest upload');
is(mysql("SELECT COUNT(*) FROM datasets WHERE customer_id = '$cid' AND file_path = 'incoming/2026/sales.csv'"),
   1, 'still one dataset for the path');

# --- another customer: its own area, its own dataset for the same path ---------------------

{
	my ($otok, $ocid) = sx_customer('st-upload-other');
	my $r = upload($otok, 'incoming/2026', [ 'sales.csv', "other\n1\n" ]);
	json_response_is($r, 201, undef, 'another customer uploads the same path');
	isnt(dataset_of($r, 'sales.csv'), $sales->{dataset_id}, 'a dataset of its own');
	is(slurp(storage_dir($ocid) . '/incoming/2026/sales.csv'), "other\n1\n", 'in its own area');
	is(slurp("$dir/incoming/2026/sales.csv"), $csv2, "the first customer's file is untouched");
	is(sx(GET => "/storage-explorer/datasets/$sales->{dataset_id}", $otok)->{status}, 404,
	   "and it cannot see the first customer's dataset");
}

# --- root folder, file names ------------------------------------------------------

# (a quoted-string in the part header: each backslash is sent escaped)
$res = upload($tok, undef, [ 'C:\\\\Users\\\\me\\\\Umsatz M' . "\xc3\xa4" . 'rz.csv', "x\n1\n" ]);
json_response_is($res, 201, undef, 'no folder_path: the root; a Windows path as file name');
is($res->{json}{folder_path}, '', 'folder_path ""');
is($res->{json}{files}[0]{file_name}, "Umsatz M\x{e4}rz.csv", 'only the last path component is kept');
ok(-f "$dir/Umsatz M\xc3\xa4rz.csv", 'stored at the root');
$res = upload($tok, '', [ 'dir/sub/plain.txt', "a|b\n1|2\n" ]);
json_response_is($res, 201, undef, 'folder_path "" and a .txt file');
is($res->{json}{files}[0]{file_name}, 'plain.txt', 'forward-slash path cut too');
is($res->{json}{files}[0]{file_format}, 'csv', 'txt is shown as csv');

# --- refusals: nothing written, nothing recorded ------------------------------------------

my @before = counts();
my @refused = (
	[ [ [ 'x.pdf', 'data' ] ], 400, 'unsupported_file_type',
	  "File 'x.pdf' has an unsupported type: expected .csv, .txt, .tsv, .json, .jsonl, .ndjson, .xlsx, .xls or .parquet" ],
	[ [ [ 'fine.csv', "a\n1\n" ], [ 'notes.docx', 'data' ] ], 400, 'unsupported_file_type',
	  qr/^File 'notes\.docx' has an unsupported type/ ],
	[ [ [ 'noext', 'data' ] ], 400, 'unsupported_file_type', qr/^File 'noext' / ],
	[ [ [ '.hidden.csv', "a\n" ] ], 400, 'invalid_file_name',
	  "File '.hidden.csv' refused: file names starting with '.' are not stored" ],
	[ [ [ '..', "a\n" ] ], 400, 'invalid_file_name', qr/^File '\.\.' refused/ ],
	[ [ [ "a\x01b.csv", "a\n" ] ], 400, 'invalid_file_name',
	  qr/refused: the file name contains control characters$/ ],
	[ [ [ "caf\xe9.csv", "a\n" ] ], 400, 'invalid_file_name',
	  "File 'caf?.csv' refused: the file name is not UTF-8" ],
	[ [ [ ('n' x 252) . '.csv', "a\n" ] ], 400, 'invalid_file_name',
	  qr/refused: the file name is longer than 255 bytes$/ ],
	[ [ [ 'a.csv', "a\n" ], [ 'a.csv', "b\n" ] ], 400, 'duplicate_file',
	  "File 'a.csv' appears twice in the upload" ],
	[ [ [ undef, 'value', 'comment' ] ], 400, 'invalid_upload',
	  "Unexpected form field 'comment': send files in parts named file" ],
	[ [ [ 'a.csv', "a\n", 'upload' ] ], 400, 'invalid_upload',
	  "Unexpected form field 'upload': send files in parts named file" ],
	[ [], 400, 'no_files', 'No files in the upload: send them as multipart/form-data parts named file' ],
);
for my $c (@refused) {
	my ($files, $status, $code, $msg) = @$c;
	my $name = 'refused: ' . join(', ', map { $_->[0] // "field $_->[2]" } @$files);
	$name = substr($name, 0, 70);
	sx_error_is(upload($tok, 'refused/deep', @$files), $status, $code, $msg, $name);
}
sx_error_is(upload($tok, 'refused', map { [ "f$_.csv", "a\n" ] } 1 .. 101), 400, 'too_many_files',
	    'More than 100 files in one upload', '101 files');
ok(!-e "$dir/refused", 'no folder left behind by refused uploads');
is_deeply([ partial_files($dir) ], [], 'no partial file left');
is_deeply([ counts() ], \@before, 'refused uploads recorded nothing');

my @bad_folders = (
	[ '../x', "folder_path must not contain '.' or '..' segments" ],
	[ 'a/../../b', "folder_path must not contain '.' or '..' segments" ],
	[ '/etc', 'folder_path must be relative to the storage area, not absolute' ],
	[ '.git', "folder_path must not name hidden entries (a segment starting with '.')" ],
	[ 'a//b', "folder_path must not contain empty segments ('//')" ],
	[ 'a\\..\\b', 'folder_path must not contain backslashes or control characters' ],
	[ join('/', ('d') x 33), 'folder_path is too deep (32 segments at most)' ],
	[ 'x' x 1025, 'folder_path is too long (1024 bytes in all, 255 per segment)' ],
);
for my $c (@bad_folders) {
	sx_error_is(upload($tok, $c->[0], [ 'a.csv', "a\n" ]), 400, 'invalid_folder_path', $c->[1],
		    'folder_path ' . substr($c->[0], 0, 30));
}
# percent-encoded dots are decoded once, then refused like plain ones
my $b = 'bnd-enc';
$res = sx(POST => '/storage-explorer/storage/upload?folder_path=%2e%2e/escape', $tok,
	  body => multipart_body($b, [ 'a.csv', "a\n" ]), content_type => "multipart/form-data; boundary=$b");
sx_error_is($res, 400, 'invalid_folder_path', "folder_path must not contain '.' or '..' segments",
	    'folder_path %2e%2e/escape');
$res = sx(POST => '/storage-explorer/storage/upload?folder_path=a%00b', $tok,
	  body => multipart_body($b, [ 'a.csv', "a\n" ]), content_type => "multipart/form-data; boundary=$b");
sx_error_is($res, 400, 'invalid_folder_path', 'folder_path has a malformed percent escape or a NUL character',
	    'folder_path with %00');
$res = sx(POST => '/storage-explorer/storage/upload?folder=a', $tok,
	  body => multipart_body($b, [ 'a.csv', "a\n" ]), content_type => "multipart/form-data; boundary=$b");
sx_error_is($res, 400, 'invalid_query', 'folder is not a known query parameter', 'an unknown parameter is named');
ok(!-e storage_dir($cid) . '/../escape' && !-e env('SLUICE_VAR') . '/storage/customers/escape',
   'nothing written outside the root');

# a folder_path through a symlink, or through a file
unlink "$dir/linkdir";
symlink('/tmp', "$dir/linkdir") or die "symlink: $!";
sx_error_is(upload($tok, 'linkdir/x', [ 'a.csv', "a\n" ]), 400, 'invalid_folder_path',
	    "folder_path 'linkdir/x' is not a folder of the storage area", 'folder through a symlink');
ok(!-e '/tmp/x/a.csv', 'nothing written through the link');
sx_error_is(upload($tok, 'incoming/2026/sales.csv', [ 'a.csv', "a\n" ]), 400, 'invalid_folder_path',
	    "folder_path 'incoming/2026/sales.csv' is not a folder of the storage area", 'folder is a file');
mkdir "$dir/incoming/2026/d.csv";
sx_error_is(upload($tok, 'incoming/2026', [ 'd.csv', "a\n" ]), 409, 'path_conflict',
	    "'incoming/2026/d.csv' is a folder in the storage area", 'a file over a folder: 409');
is_deeply([ partial_files($dir) ], [], 'no partial file left');
is_deeply([ counts() ], \@before, 'nothing recorded');

# content type and malformed bodies
sx_error_is(sx(POST => '/storage-explorer/storage/upload', $tok, json => { a => 1 }), 415,
	    'unsupported_media_type', 'Content-Type must be multipart/form-data with a boundary',
	    'a JSON body');
sx_error_is(sx(POST => '/storage-explorer/storage/upload', $tok, body => "--x\r\nbroken",
	       content_type => 'multipart/form-data; boundary=x'), 400, 'invalid_upload', qr/\S/,
	    'a truncated multipart body');
sx_error_is(sx(POST => '/storage-explorer/storage/upload', $tok,
	       body => "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.csv\"\r\n\r\n"
		   . "a,b\n1,2\n",
	       content_type => 'multipart/form-data; boundary=x'), 400, 'invalid_upload', qr/\S/,
	    'a body without its closing boundary');
is_deeply([ partial_files($dir) ], [], 'no partial file left');
is_deeply([ counts() ], \@before, 'nothing recorded');

# --- upload_max_bytes ------------------------------------------------------------------

{
	my $orig = conf_read();
	conf_write(conf_with($orig, upload_max_bytes => 4096));
	kill 'HUP', master_pid();
	ok(wait_until(15, sub {
		upload($tok, 'big', [ 'b.csv', 'x' x 5000 ])->{status} == 413 }),
	   'after a reload upload_max_bytes = 4096 applies');
	sx_error_is(upload($tok, 'big', [ 'b.csv', 'x' x 5000 ]), 413, 'payload_too_large',
		    'The upload is larger than 4096 bytes', 'a body over upload_max_bytes');
	json_response_is(upload($tok, 'big', [ 'b.csv', "a\n" . ('1' x 3000) . "\n" ]), 201, undef,
			 'a body under the limit');
	conf_write($orig);
	kill 'HUP', master_pid();
	ok(wait_until(15, sub { upload($tok, 'big', [ 'c.csv', 'x' x 5000 ])->{status} == 201 }),
	   'limit back to the default after a reload');
	is_deeply([ partial_files($dir) ], [], 'no partial file left by the 413');
	@before = counts();
}

# --- a client that goes away mid-upload ----------------------------------------------------

# Bytes of request bodies nginx's workers hold in client_body_temp files.
sub nginx_body_bytes {
	my $f = env('SLUICE_VAR') . '/run/nginx.pid';
	open my $fh, '<', $f or return 0;
	chomp(my $master = <$fh> // '');
	my $n = 0;
	opendir my $d, '/proc' or return 0;
	for my $p (grep { /^\d+$/ } readdir $d) {
		my $st = proc_stat($p) or next;
		next unless $st->{ppid} == $master;
		opendir my $fds, "/proc/$p/fd" or next;
		for my $fd (grep { /^\d+$/ } readdir $fds) {
			my $t = readlink("/proc/$p/fd/$fd") // next;
			$n += -s "/proc/$p/fd/$fd" // 0 if $t =~ m{/client_body_temp/};
		}
	}
	return $n;
}

{
	my $bnd = 'disc-boundary';
	my $head = "--$bnd\r\nContent-Disposition: form-data; name=\"file\"; filename=\"gone.csv\"\r\n"
		. "Content-Type: text/csv\r\n\r\nid,v\n";
	my $s = open_upload_stream($tok, 'vanish', 50 * 1024 * 1024,
				   "multipart/form-data; boundary=$bnd");
	print {$s} $head;
	my $chunk = "1,abcdefghij\n" x 5000;
	my $sent = 0;
	for (1 .. 40) { print {$s} $chunk; $sent += length $chunk }
	# nginx reads the body into its own temporary file (unlinked at once,
	# open in an nginx worker): no sluice worker is taken, and no partial
	# file made, while a client is still sending.
	ok(wait_until(15, sub { nginx_body_bytes() > 1024 * 1024 }),
	   'nginx buffers the body while it arrives');
	ok(!-e "$dir/vanish", 'no worker has seen it yet: no folder, no partial file');
	close $s;          # the client goes away, 50 MB announced, ~2.6 MB sent
	ok(wait_until(20, sub { nginx_body_bytes() == 0 }), 'nginx drops its temporary file');
	ok(!-e "$dir/vanish/gone.csv", 'no file under the name');
	is_deeply([ partial_files($dir) ], [], 'no partial file');
	is_deeply([ counts() ], \@before, 'no upload and no dataset recorded');
}

# --- permissions ------------------------------------------------------------------------------

is(http(POST => '/storage-explorer/storage/upload', { body => 'x',
	content_type => 'multipart/form-data; boundary=x' })->{status}, 401, 'no token: 401');
json_response_is(upload($ro, 'x', [ 'a.csv', "a\n" ]), 403,
		 { detail => 'Missing permission STORAGE_EXPLORER.WRITE' }, 'READ only: 403');
is_deeply([ counts() ], \@before, 'refused callers recorded nothing');

# --- 1 GiB in constant memory -------------------------------------------------------------------
#
# nginx buffers the body to its temporary file, then hands it to a worker
# at local speed, which writes it to disk 64 KiB at a time: the workers'
# peak RSS (VmHWM) must not grow with the file.  sluice work then infers the
# whole file (exact row count) by streaming it too, in a child process
# whose peak RSS its supervisor logs with the item.

sub work_log_lines {
	my ($from) = @_;
	open my $fh, '<', env('SLUICE_WORK_LOG') or return ();
	seek $fh, $from, 0;
	return <$fh>;
}

sub proc_kb {
	my ($pid, $field) = @_;
	open my $fh, '<', "/proc/$pid/status" or return 0;
	while (<$fh>) { return $1 if /^\Q$field\E:\s+(\d+) kB/ }
	return 0;
}

{
	my $line = sprintf("%09d,%s\n", 0, 'x' x 54);           # 64 bytes a row
	my $chunk = $line x 16384;                                # 1 MiB
	my $mib = 1024;
	my $bnd = 'gib-boundary';
	my $head = "--$bnd\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\n"
		. "Content-Type: text/csv\r\n\r\nid,payload\n";
	my $tail = "\r\n--$bnd--\r\n";
	my $size = length("id,payload\n") + $mib * length $chunk;
	my $len = length($head) - length("id,payload\n") + $size + length $tail;
	my @workers = worker_pids();
	my $work_log0 = -s env('SLUICE_WORK_LOG') // 0;
	my %hwm0 = map { $_ => proc_kb($_, 'VmHWM') } @workers;
	my %rss0 = map { $_ => proc_kb($_, 'VmRSS') } @workers;
	my %peak = %rss0;
	my $t0 = time;
	my $s = open_upload_stream($tok, 'huge', $len, "multipart/form-data; boundary=$bnd");
	print {$s} $head or die "write: $!";
	for my $i (1 .. $mib) {
		print {$s} $chunk or die "write at $i MiB: $!";
		next if $i % 16;
		for my $w (@workers) {
			my $kb = proc_kb($w, 'VmRSS');
			$peak{$w} = $kb if $kb > $peak{$w};
		}
	}
	print {$s} $tail;
	my $answer = '';
	while (sysread($s, my $buf, 65536)) { $answer .= $buf }
	close $s;
	my $secs = time - $t0;
	like($answer, qr{^HTTP/1\.1 201 }, '1 GiB upload: 201') or diag substr($answer, 0, 400);
	is(-s "$dir/huge/big.csv", $size, 'the whole file is on disk');
	my ($grow_hwm, $grow_rss) = (0, 0);
	for my $w (@workers) {
		my $g = proc_kb($w, 'VmHWM') - $hwm0{$w};
		$grow_hwm = $g if $g > $grow_hwm;
		$g = $peak{$w} - $rss0{$w};
		$grow_rss = $g if $g > $grow_rss;
	}
	diag sprintf('1 GiB upload in %.1f s (%.0f MiB/s); workers: peak RSS %s kB before, growth of '
		     . 'VmHWM %d kB, of sampled VmRSS %d kB', $secs, $mib / $secs,
		     join('/', map { $hwm0{$_} } @workers), $grow_hwm, $grow_rss);
	cmp_ok($grow_hwm, '<', 8 * 1024, "the workers' peak RSS grew by less than 8 MiB");
	cmp_ok($grow_rss, '<', 8 * 1024, 'so did their RSS sampled during the upload');
	my ($id) = $answer =~ /"dataset_id":"([0-9a-f-]{36})"/;
	my $ds = wait_dataset($tok, $id, 300);
	is($ds->{status}, 'ready', 'the 1 GiB CSV is inferred') or diag explain $ds;
	is($ds->{schema}{row_count}, $mib * 16384, 'with the exact row count');
	# The child settles the dataset before it exits; the supervisor logs
	# the child's end when it reaps it, a moment later.
	my ($ms, $cpu, $rss);
	wait_until(30, sub {
		($ms, $cpu, $rss) = map { /kind=storage_infer .* ms=(\d+) cpu_ms=(\d+) rss_kb=(\d+)/ }
			grep { /msg="work finished"/ && /outcome=done/ } work_log_lines($work_log0);
		defined $rss;
	});
	diag sprintf('sluice work: its child peaked at %s kB RSS inferring it, %s ms of CPU '
		     . 'in %s ms (%.1f s after the upload)', $rss // '?', $cpu // '?', $ms // '?',
		     time - $t0 - $secs);
	ok(defined $rss, 'the inference is logged with its CPU time and peak RSS');
	cmp_ok($rss // 1e9, '<', 256 * 1024, 'the inferring child stayed under 256 MiB');
	# Reading 1 GiB takes CPU; one thread cannot take more than the time.
	cmp_ok($cpu // 0, '>', 100, 'its CPU time is counted');
	cmp_ok($cpu // 1e9, '<=', ($ms // 0) + 20, 'and is no more than its time');
	unlink "$dir/huge/big.csv";
}

done_testing;
