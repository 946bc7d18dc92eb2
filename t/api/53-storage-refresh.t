#!/usr/bin/perl
# PUT /storage-explorer/datasets/{id}/refresh-schema: 200 with exactly the
# spec's fields, options stored and reused; 400 for invalid values, 422 for
# options the format does not take and for a file the options cannot read,
# 404; the large-file path through sluice work (200, and 202 when the wait
# runs out); isolation and permissions.

use strict;
use warnings;

use FindBin;
use Test::More;

use SluiceTest;
use StorageTest;

my ($tok, $cid) = sx_customer('st-refresh');
my ($other) = sx_customer('st-refresh-other');

sub refresh {
	my ($id, $body, $t, %o) = @_;
	return sx(PUT => "/storage-explorer/datasets/$id/refresh-schema", $t // $tok,
		  defined $body ? (json => $body) : (), %o);
}

my $report = "Report generated 2026-01-01\nregion;sales;day\nnorth;10.5;2026-01-02\n"
	. "south;7.25;2026-01-03\n";
my $latin1 = "name;city\nJos\xe9;Z\xfcrich\nAnn;Bern\n";
my $res = upload($tok, 'r', [ 'report.csv', $report ], [ 'people.csv', $latin1 ],
		 [ 'doc.json', '[{"a": 1}]' ], [ 'book.xlsx', 'not really a workbook' ],
		 [ 'cols.parquet', 'PAR1 not really' ], [ 'tabbed.tsv', "a\tb\n1\t2\n" ]);
is($res->{status}, 201, 'upload') or diag describe($res);
my %id = map { $_->{file_name} => $_->{dataset_id} } @{ $res->{json}{files} };
wait_dataset($tok, $_) for values %id;

# --- 200 ---------------------------------------------------------------------------

$res = refresh($id{'report.csv'}, { skip_rows => 1, header_row => 0, delimiter => ';' });
json_response_is($res, 200, undef, 'refresh with skip_rows, header_row, delimiter');
my $j = $res->{json};
is_deeply([ sort keys %$j ], [ sort qw(dataset_id dataset_name status parsing_options schema refreshed_at) ],
	  'exactly the spec fields');
is($j->{dataset_id}, $id{'report.csv'}, 'dataset_id');
is($j->{dataset_name}, 'report.csv', 'dataset_name');
is($j->{status}, 'schema_refreshed', 'status schema_refreshed');
is_deeply($j->{parsing_options}, { skip_rows => 1, header_row => 0, delimiter => ';' },
	  'parsing_options: the options applied');
iso_time_ok($j->{refreshed_at}, 'refreshed_at');
is_deeply($j->{schema}, { columns => [
	{ name => 'region', inferred_type => 'VARCHAR', nullable => JSON::PP::false, position => 0 },
	{ name => 'sales', inferred_type => 'DECIMAL', nullable => JSON::PP::false, position => 1,
	  precision => 4, scale => 2 },
	{ name => 'day', inferred_type => 'DATE', nullable => JSON::PP::false, position => 2 } ],
	row_count => 2, analyzed_rows => 2 }, 'the schema read with the new options')
	or diag explain $j->{schema};

my $ds = sx(GET => "/storage-explorer/datasets/$id{'report.csv'}", $tok)->{json};
is_deeply($ds->{parsing_options}, $j->{parsing_options}, 'GET dataset: parsing_options stored');
is_deeply($ds->{schema}, $j->{schema}, 'GET dataset: the new schema');
is($ds->{refreshed_at}, $j->{refreshed_at}, 'GET dataset: refreshed_at');
is($ds->{status}, 'ready', 'the stored status stays ready');

# a re-upload of the file is inferred with the stored options
$res = upload($tok, 'r', [ 'report.csv', $report . "east;1.5;2026-01-04\n" ]);
is($res->{status}, 201, 're-upload') or diag describe($res);
$ds = wait_dataset($tok, $id{'report.csv'});
is_deeply([ map { $_->{name} } @{ $ds->{schema}{columns} } ], [qw(region sales day)],
	  're-upload inferred with the stored options');
is($ds->{schema}{row_count}, 3, '3 rows now');

# normalised values: tab, encoding names
$res = refresh($id{'tabbed.tsv'}, { delimiter => 'TAB' });
json_response_is($res, 200, undef, 'delimiter "TAB"');
is_deeply($res->{json}{parsing_options}, { delimiter => "\t" }, 'stored as a tab character');
$res = refresh($id{'tabbed.tsv'}, { delimiter => "\t", skip_rows => 0 });
json_response_is($res, 200, undef, 'delimiter "\t"');
$res = refresh($id{'people.csv'}, { encoding => 'LATIN1', delimiter => ';' });
json_response_is($res, 200, undef, 'encoding LATIN1');
is_deeply($res->{json}{parsing_options}, { encoding => 'latin-1', delimiter => ';' }, 'encoding normalised');
is_deeply([ map { $_->{name} } @{ $res->{json}{schema}{columns} } ], [qw(name city)], 'Latin-1 columns');
is($res->{json}{schema}{row_count}, 2, 'Latin-1 rows');
# nulls are "not given"; no body at all is a refresh with the defaults
$res = refresh($id{'people.csv'}, { encoding => 'latin-1', sheet_name => undef, skip_rows => undef });
is_deeply($res->{json}{parsing_options}, { encoding => 'latin-1' }, 'null options are left out');
$res = sx(PUT => "/storage-explorer/datasets/$id{'tabbed.tsv'}/refresh-schema", $tok);
json_response_is($res, 200, undef, 'no body: the defaults');
is_deeply($res->{json}{parsing_options}, {}, 'no options');
json_response_is(refresh($id{'tabbed.tsv'}, {}), 200, undef, 'an empty object');

# --- 400 --------------------------------------------------------------------------------

my $before = mysql("SELECT CONCAT_WS('|', parsing_options, refreshed_at, MD5(schema_json)) FROM datasets "
		   . "WHERE id = '$id{'report.csv'}'");
my @bad = (
	[ { skip_rows => -1 }, 'skip_rows must be an integer from 0 to 1000000000' ],
	[ { skip_rows => '2' }, 'skip_rows must be an integer' ],
	[ { skip_rows => 1.5 }, 'skip_rows must be an integer' ],
	[ { skip_rows => JSON::PP::true }, 'skip_rows must be an integer' ],
	[ { skip_rows => 1000000001 }, 'skip_rows must be an integer from 0 to 1000000000' ],
	[ { header_row => -1 }, 'header_row must be an integer from 0 to 1000000000' ],
	[ { header_row => [0] }, 'header_row must be an integer' ],
	[ { header_row => 1000000001 }, 'header_row must be an integer from 0 to 1000000000' ],
	[ { encoding => 'ebcdic' }, 'encoding must be one of utf-8, utf8, utf-16, utf16, utf-16le, utf-16be, latin-1, '
	  . 'latin1, iso-8859-1, iso8859-1, windows-1252, cp1252' ],
	[ { encoding => 8 }, 'encoding must be a string' ],
	[ { delimiter => ':' }, 'delimiter must be one of ",", ";", "|", a tab ("\t" or "tab") or a space (" " or "space")' ],
	[ { delimiter => ',,' }, 'delimiter must be one of ",", ";", "|", a tab ("\t" or "tab") or a space (" " or "space")' ],
	[ { delimiter => '' }, 'delimiter must be one of ",", ";", "|", a tab ("\t" or "tab") or a space (" " or "space")' ],
	[ { delimiter => 44 }, 'delimiter must be a string' ],
	[ { sheet_name => 5 }, 'sheet_name must be a string' ],
	[ { sheet_name => '' }, 'sheet_name must be 1 to 255 bytes long' ],
	[ { sheet_name => 'x' x 256 }, 'sheet_name must be 1 to 255 bytes long' ],
	[ { sheet_name => "\x{e9}" x 128 }, 'sheet_name must be 1 to 255 bytes long' ],
	[ { sheet => 'a' }, 'sheet is not a known field' ],
	[ [ 1 ], 'The body must be a JSON object' ],
	[ 'text', 'The body must be a JSON object' ],
);
for my $b (@bad) {
	sx_error_is(refresh($id{'report.csv'}, $b->[0]), 400, 'invalid_parsing_options', $b->[1],
		    'body ' . json_encode($b->[0]));
}
sx_error_is(sx(PUT => "/storage-explorer/datasets/$id{'report.csv'}/refresh-schema?force=1", $tok),
	    400, 'invalid_query', 'force is not a known query parameter', 'a query parameter is named');
json_response_is(refresh($id{'report.csv'}, undef, undef, body => '{"skip_rows":', content_type => 'application/json'),
		 400, undef, 'malformed JSON: 400');
json_response_is(refresh($id{'report.csv'}, undef, undef, body => 'skip_rows=1', content_type => 'text/plain'),
		 415, undef, 'not JSON: 415');
# invalid value AND an option the format does not take: the value is checked first
sx_error_is(refresh($id{'doc.json'}, { delimiter => ':' }), 400, 'invalid_parsing_options', undef,
	    'invalid delimiter for JSON: 400 before 422');
is(mysql("SELECT CONCAT_WS('|', parsing_options, refreshed_at, MD5(schema_json)) FROM datasets "
	 . "WHERE id = '$id{'report.csv'}'"), $before, 'refused refreshes changed nothing');

# --- 422 ----------------------------------------------------------------------------------

my @na = (
	[ 'report.csv', { sheet_name => 'Sheet1' }, 'sheet_name does not apply to csv files' ],
	[ 'tabbed.tsv', { sheet_name => 'Sheet1' }, 'sheet_name does not apply to txt files' ],
	[ 'doc.json', { delimiter => ',' }, 'delimiter does not apply to json files' ],
	[ 'doc.json', { encoding => 'utf-8' }, 'encoding does not apply to json files' ],
	[ 'doc.json', { sheet_name => 'a' }, 'sheet_name does not apply to json files' ],
	[ 'doc.json', { skip_rows => 1 }, 'skip_rows does not apply to json files' ],
	[ 'book.xlsx', { delimiter => ';' }, 'delimiter does not apply to xlsx files' ],
	[ 'book.xlsx', { encoding => 'utf-8' }, 'encoding does not apply to xlsx files' ],
	[ 'cols.parquet', { delimiter => ',' }, 'delimiter does not apply to parquet files' ],
	[ 'cols.parquet', { sheet_name => 'a' }, 'sheet_name does not apply to parquet files' ],
	[ 'cols.parquet', { header_row => 0 }, 'header_row does not apply to parquet files' ],
);
for my $c (@na) {
	sx_error_is(refresh($id{ $c->[0] }, $c->[1]), 422, 'option_not_supported', $c->[2],
		    "$c->[0] " . json_encode($c->[1]));
}
# options the reader refuses for this file: 400; a file the options cannot
# read: 422; the dataset unchanged either way
sx_error_is(refresh($id{'report.csv'}, { skip_rows => 50 }), 400, 'invalid_parsing_options',
	    qr/\brows to skip\b/, 'skip_rows past the end of the file');
# the bounds at their largest pass the body's checks and reach the reader or the format check
sx_error_is(refresh($id{'report.csv'}, { skip_rows => 1000000000 }), 400, 'invalid_parsing_options',
	    qr/\brows to skip\b/, 'skip_rows 1000000000: the reader\'s reason');
sx_error_is(refresh($id{'report.csv'}, { sheet_name => 'x' x 255 }), 422, 'option_not_supported',
	    'sheet_name does not apply to csv files', 'sheet_name of 255 bytes: past the body checks');
sx_error_is(refresh($id{'people.csv'}, { encoding => 'utf-8' }), 422, 'schema_refresh_failed',
	    qr/^The file could not be read with these options: invalid UTF-8/, 'a Latin-1 file read as UTF-8');
sx_error_is(refresh($id{'book.xlsx'}, { sheet_name => 'Sheet1' }), 422, 'schema_refresh_failed',
	    qr/^The file could not be read with these options: \S/, 'a workbook that is not one');
is(mysql("SELECT CONCAT_WS('|', parsing_options, refreshed_at, MD5(schema_json)) FROM datasets "
	 . "WHERE id = '$id{'report.csv'}'"), $before, 'a failed refresh changed nothing');

# --- 404, isolation, permissions ---------------------------------------------------------------

my $nf = { error => 'dataset_not_found', message => 'Dataset not found' };
json_response_is(refresh('00000000-0000-4000-8000-000000000000', {}), 404, $nf, 'unknown id');
json_response_is(refresh('nope', {}), 404, $nf, 'malformed id');
json_response_is(refresh($id{'report.csv'}, {}, $other), 404, $nf, "another customer's dataset");
json_response_is(refresh('00000000-0000-4000-8000-000000000000', { skip_rows => -1 }), 404, $nf,
		 'unknown id with a bad body: 404 first');
is(sx(PUT => "/storage-explorer/datasets/$id{'report.csv'}/refresh-schema", undef, json => {})->{status},
   401, 'no token: 401');
json_response_is(refresh($id{'report.csv'}, {}, token(customer => 'st-refresh', permissions => 'STORAGE_EXPLORER.READ')),
		 403, { detail => 'Missing permission STORAGE_EXPLORER.WRITE' }, 'READ only: 403');
is(mysql("SELECT CONCAT_WS('|', parsing_options, refreshed_at, MD5(schema_json)) FROM datasets "
	 . "WHERE id = '$id{'report.csv'}'"), $before, 'still unchanged');

# --- spreadsheets and Parquet (fixtures by third-party writers) ----------------------------

{
	my $fx = "$FindBin::Bin/../fixtures/storage/binary";
	my $r = upload($tok, 'bin', map { my $f = $_; open my $fh, '<:raw', "$fx/$f" or die "$f: $!";
					 local $/; [ $f, scalar <$fh> ] } qw(types.xlsx types.xls types.parquet));
	is($r->{status}, 201, 'upload of types.xlsx, types.xls, types.parquet') or diag describe($r);
	my %b = map { $_->{file_name} => $_->{dataset_id} } @{ $r->{json}{files} };
	wait_dataset($tok, $_) for values %b;
	my $cols = sub { join ' ', map { "$_->{name}:$_->{inferred_type}" } @{ $_[0]{schema}{columns} || [] } };

	$r = refresh($b{'types.xlsx'}, { sheet_name => 'Second' });
	json_response_is($r, 200, undef, 'XLSX: sheet_name Second');
	is($cols->($r->{json}), 'code:VARCHAR qty:INTEGER', 'the second sheet\'s columns');
	is($r->{json}{schema}{row_count}, 3, 'and rows');
	$r = refresh($b{'types.xlsx'}, { sheet_name => 'With title', skip_rows => 1 });
	json_response_is($r, 200, undef, 'XLSX: a sheet with a title row, skip_rows 1');
	is($cols->($r->{json}), 'region:VARCHAR total:DECIMAL', 'the header below the title');
	is($r->{json}{schema}{row_count}, 2, 'two rows');
	is_deeply($r->{json}{parsing_options}, { sheet_name => 'With title', skip_rows => 1 }, 'options');
	sx_error_is(refresh($b{'types.xlsx'}, { sheet_name => 'nope' }), 400, 'invalid_parsing_options',
		    'no sheet named "nope"; sheets: Data, Second, With title, Empty', 'XLSX: a sheet that is not there');
	is_deeply(sx(GET => "/storage-explorer/datasets/$b{'types.xlsx'}", $tok)->{json}{parsing_options},
		  { sheet_name => 'With title', skip_rows => 1 }, 'the refused sheet changed nothing');
	my $xls_items = sub { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'storage_infer' "
				    . "AND ref_id = '$b{'types.xls'}'") };
	my $before_xls = $xls_items->();
	$r = refresh($b{'types.xls'}, { sheet_name => 'Other' });
	json_response_is($r, 200, undef, 'XLS: sheet_name Other');
	is($xls_items->(), $before_xls + 1, 'XLS, however small, is read by sluice work, not in the worker');
	is($cols->($r->{json}), 'k:VARCHAR v:INTEGER', 'its columns');
	is($r->{json}{schema}{row_count}, 2, 'its rows');
	$r = refresh($b{'types.parquet'}, {});
	json_response_is($r, 200, undef, 'Parquet: a refresh without options (footer only, in the request)');
	is($r->{json}{schema}{row_count}, 3, 'its rows');
	is(scalar @{ $r->{json}{schema}{columns} }, 14, 'its columns');
}

# --- large files: through sluice work ---------------------------------------------------------------

{
	my $orig = conf_read();
	reload_serve(conf_with($orig, refresh_inline_max_bytes => 10));
	my $n = mysql("SELECT COUNT(*) FROM work_queue WHERE ref_id = '$id{'report.csv'}'");
	$res = refresh($id{'report.csv'}, { skip_rows => 1, delimiter => ';' });
	json_response_is($res, 200, undef, 'a file over refresh_inline_max_bytes: 200 after sluice work');
	is($res->{json}{status}, 'schema_refreshed', 'schema_refreshed');
	is($res->{json}{schema}{row_count}, 3, 'its schema');
	is_deeply($res->{json}{parsing_options}, { skip_rows => 1, delimiter => ';' }, 'its options');
	is(mysql("SELECT COUNT(*) FROM work_queue WHERE ref_id = '$id{'report.csv'}'"), $n + 1,
	   'it went through the work queue');
	sx_error_is(refresh($id{'report.csv'}, { skip_rows => 50 }), 400, 'invalid_parsing_options',
		    qr/\brows to skip\b/, 'an option refused in sluice work: 400');
	sx_error_is(refresh($id{'people.csv'}, { encoding => 'utf-8' }), 422, 'schema_refresh_failed',
		    qr/^The file could not be read with these options: invalid UTF-8/,
		    'a file unreadable with the options in sluice work: 422');

	reload_serve(conf_with($orig, refresh_inline_max_bytes => 10, refresh_wait_s => 1));
	my $r = dev('work-stop');
	is($r->{exit}, 0, 'sluice work stopped') or diag $r->{err};
	$res = refresh($id{'report.csv'}, { skip_rows => 1, header_row => 0, delimiter => ';' });
	json_response_is($res, 202, undef, 'sluice work too slow: 202');
	is($res->{json}{status}, 'refreshing', 'status refreshing');
	is_deeply($res->{json}{parsing_options}, { skip_rows => 1, header_row => 0, delimiter => ';' },
		  'the options');
	like($res->{json}{message}, qr/background/, 'a message says where the result goes');
	$r = dev('work-start');
	is($r->{exit}, 0, 'sluice work started') or diag $r->{err};
	ok(wait_until(30, sub {
		my $d = sx(GET => "/storage-explorer/datasets/$id{'report.csv'}", $tok)->{json};
		($d->{parsing_options}{header_row} // -1) == 0 }), 'the dataset gets the new options later');
	reload_serve($orig);
}

done_testing;
