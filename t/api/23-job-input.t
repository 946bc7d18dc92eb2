#!/usr/bin/perl
# PATCH /platform/jobs/{jobId}/input: the partial reset (a strict ISO 8601
# incremental_column_value, jdbc incremental types only, 409 while RUNNING),
# column_include_list (1..1024 names, [] or null clears it), 400s naming the
# field, the 200 body against GET, 404s and customer isolation.

use strict;
use warnings;

use JSON::PP ();
use Test::More;

use JobsFixture;
use SluiceTest;

my ($token) = customer_token('demo');
my ($other) = customer_token('jobs-input-other');

my $BOOKMARK = '2026-01-31T10:00:00Z';
my $p = seed_pipeline(token => $token, jobs => [
	{ load_type => 'incremental', incremental_column_name => 'updated_at',
	  incremental_column_type => 'timestamp without time zone', bookmark => $BOOKMARK },
	{ load_type => 'incremental_with_qualify', incremental_column_name => 'updated_at',
	  incremental_column_type => 'timestamp without time zone', primary_keys => ['id'] },
	{ load_type => 'full_load' },
	{ connector => 'singer' },
	{ connector => 'file_storage' },
	{ load_type => 'incremental', incremental_column_name => 'id',
	  incremental_column_type => 'bigint', bookmark => '2026-01-01', job_status => 'RUNNING' },
]);
my $pid = $p->{pipeline_id};
my ($incr, $qual, $full, $singer, $files, $running) = @{ $p->{job_ids} };

sub patch {
	my ($id, $body, $tok) = @_;
	return http(PATCH => "/platform/jobs/$id/input",
		{ token => $tok // $token, json => $body });
}

sub bookmark { job_state_row($_[0])->{incremental_column_value} }

sub patched_ok {
	my ($id, $body, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $res = patch(uuid_hyphens($id), $body);
	json_response_is($res, 200, undef, $name);
	is($res->{json}{status}, JSON::PP::true, "$name: status true");
	is_deeply([ sort keys %{ $res->{json}{data} || {} } ], [qw(input job_id)],
		"$name: data fields");
	is($res->{json}{data}{job_id}, $id, "$name: job_id with underscores");
	is_deeply($res->{json}{data}{input}, job_get($token, $id)->{input},
		"$name: input is the job's input as GET shows it");
	return $res;
}

sub invalid_is {
	my ($res, $errors, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($res->{status}, 400, "$name: 400") or diag(describe($res));
	my $d = $res->{json}{detail} || {};
	is($d->{error}, 'ValidationError', "$name: error");
	is($d->{message}, 'Input validation failed', "$name: message");
	is_deeply([ map { [ $_->{field}, $_->{error_code} ] } @{ $d->{validation_errors} } ],
		$errors, "$name: validation_errors");
	is_deeply($d->{required_fields}, [], "$name: required_fields");
}

# --- incremental_column_value ----------------------------------------------------

my $res = patched_ok($incr, { connector => 'jdbc',
	incremental_column_value => '2026-02-01T00:00:00Z' }, 'bookmark on incremental');
is($res->{json}{data}{input}{incremental_column_value}, '2026-02-01T00:00:00Z',
	'bookmark: in the answer');
is($res->{json}{data}{input}{load_type}, 'incremental', 'bookmark: input rendered whole');
is(bookmark($incr), '2026-02-01T00:00:00Z', 'bookmark: in job_state');

patched_ok($qual, { incremental_column_value => '2026-03-01' },
	'bookmark on incremental_with_qualify, without connector');
is(bookmark($qual), '2026-03-01', 'qualify: bookmark stored');

for my $v ('2026-02-01T10:00:00.123456+02:00', '2026-02-01T10:00:00', '2024-02-29') {
	patched_ok($incr, { incremental_column_value => $v }, "bookmark '$v'");
	is(bookmark($incr), $v, "'$v' stored as given");
}

for my $v ('2026-02-30', '2023-02-29', 'yesterday', '2026-01-01 10:00:00',
	   '2026-01-01T25:00:00Z', '2026-01-01T10:00:00+0200', '1706745600', '') {
	invalid_is(patch($incr, { incremental_column_value => $v }),
		[ [ incremental_column_value => 'INVALID_INCREMENTAL_COLUMN_VALUE' ] ],
		"bookmark '$v'");
}
invalid_is(patch($incr, { incremental_column_value => 1706745600 }),
	[ [ incremental_column_value => 'INVALID_INCREMENTAL_COLUMN_VALUE' ] ],
	'bookmark as a number');
is(bookmark($incr), '2024-02-29', 'invalid bookmarks: nothing written');

for my $case ([ $full, 'full_load jdbc' ], [ $singer, 'singer' ], [ $files, 'file_storage' ]) {
	my ($id, $name) = @$case;
	invalid_is(patch($id, { incremental_column_value => $BOOKMARK }),
		[ [ incremental_column_value => 'INCREMENTAL_VALUE_NOT_SUPPORTED' ] ],
		"bookmark on a $name job");
}
like(patch($full, { incremental_column_value => $BOOKMARK })->{json}{detail}
	{validation_errors}[0]{message}, qr/reset-state/, 'not supported: points to reset-state');
is(bookmark($full), undef, 'full_load: nothing written');

# RUNNING: 409 for the bookmark, nothing written; the column list is fine.
$res = patch($running, { incremental_column_value => $BOOKMARK });
is($res->{status}, 409, 'RUNNING: 409');
is_deeply([ keys %{ $res->{json} } ], ['detail'], 'RUNNING: {"detail"}');
like($res->{json}{detail}, qr/RUNNING/, 'RUNNING: says why');
is(bookmark($running), '2026-01-01', 'RUNNING: bookmark kept');
patched_ok($running, { column_include_list => [qw(id name)] },
	'RUNNING: column_include_list');

# --- connector ---------------------------------------------------------------------

invalid_is(patch($incr, { connector => 'singer', incremental_column_value => $BOOKMARK }),
	[ [ connector => 'CONNECTOR_MISMATCH' ] ], 'connector mismatch');
invalid_is(patch($incr, { connector => 5 }), [ [ connector => 'INVALID_TYPE' ] ],
	'connector not a string');
patched_ok($singer, { connector => 'singer' }, 'matching connector alone');
invalid_is(patch($incr, { connector => 'c' x 32 }), [ [ connector => 'CONNECTOR_MISMATCH' ] ],
	'connector of 32 characters (the maximum): checked against the job');
invalid_is(patch($incr, { connector => 'c' x 33 }), [ [ connector => 'OUT_OF_RANGE' ] ],
	'connector of 33 characters');

# --- column_include_list --------------------------------------------------------------

$res = patched_ok($incr, { column_include_list => [qw(id updated_at total)] }, 'set list');
is_deeply($res->{json}{data}{input}{column_include_list}, [qw(id updated_at total)],
	'list: in the answer');
is_deeply(job_row($incr)->{column_include_list}, [qw(id updated_at total)], 'list: stored');
is(bookmark($incr), '2024-02-29', 'list: bookmark untouched');

$res = patched_ok($incr, { column_include_list => [] }, 'clear with []');
ok(!exists $res->{json}{data}{input}{column_include_list}, '[]: gone from input');
is(job_row($incr)->{column_include_list}, undef, '[]: NULL in the table');

patched_ok($incr, { column_include_list => ['a'] }, 'set one');
patched_ok($incr, { column_include_list => undef }, 'clear with null');
is(job_row($incr)->{column_include_list}, undef, 'null: NULL in the table');

my @max = map { "c$_" } 1 .. 1024;
patched_ok($files, { column_include_list => \@max }, '1024 names');
is(scalar @{ job_row($files)->{column_include_list} }, 1024, '1024 names stored');
patched_ok($singer, { column_include_list => [ 'n' x 255, "\x{e9}" x 255 ] },
	'255-character names');

for my $case (
	[ '1025 names',      [ @max, 'c1025' ] ],
	[ 'empty name',      [ 'a', '' ] ],
	[ '256 characters',  [ 'n' x 256 ] ],
	[ 'not a string',    [ 'a', 1 ] ],
	[ 'duplicate',       [ 'a', 'a' ] ],
	[ 'not an array',    'a,b' ],
) {
	my ($name, $v) = @$case;
	invalid_is(patch($files, { column_include_list => $v }),
		[ [ column_include_list => 'INVALID_COLUMN_INCLUDE_LIST' ] ], "list: $name");
}
is(scalar @{ job_row($files)->{column_include_list} }, 1024, 'invalid lists: nothing written');

# Both fields in one request: all or nothing.
invalid_is(patch($qual, { incremental_column_value => '2026-05-05',
	column_include_list => [''] }),
	[ [ column_include_list => 'INVALID_COLUMN_INCLUDE_LIST' ] ], 'one bad field of two');
is(bookmark($qual), '2026-03-01', 'one bad field of two: the good one is not written');
patched_ok($qual, { incremental_column_value => '2026-05-05',
	column_include_list => [qw(id updated_at)] }, 'both fields');
is(bookmark($qual), '2026-05-05', 'both: bookmark');
is_deeply(job_row($qual)->{column_include_list}, [qw(id updated_at)], 'both: list');

# A failure on the second write leaves the first unwritten.
mysql(q{CREATE TRIGGER jobs_test_input_fail BEFORE UPDATE ON jobs
	FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'test failure'});
$res = patch($qual, { incremental_column_value => '2026-06-06',
	column_include_list => ['x'] });
mysql('DROP TRIGGER jobs_test_input_fail');
json_response_is($res, 500, { detail => 'Internal Server Error' }, 'database failure');
is(bookmark($qual), '2026-05-05', 'database failure: bookmark rolled back');
is_deeply(job_row($qual)->{column_include_list}, [qw(id updated_at)],
	'database failure: list unchanged');

# --- anything else ------------------------------------------------------------------------

for my $f (qw(table_name load_type plugin incremental_column_name primary_keys)) {
	invalid_is(patch($incr, { $f => 'x' }), [ [ $f => 'UNKNOWN_FIELD' ] ],
		"field $f");
}
invalid_is(patch($incr, { column_include_list => ['a'], nope => 1 }),
	[ [ nope => 'UNKNOWN_FIELD' ] ], 'unknown field beside a good one');
is(job_row($incr)->{column_include_list}, undef, 'unknown field: nothing written');
$res = http(PATCH => "/platform/jobs/$incr/input", { token => $token, body => '[]',
	content_type => 'application/json' });
invalid_is($res, [ [ body => 'INVALID_TYPE' ] ], 'array body');
patched_ok($incr, {}, 'empty object: nothing to change');

# --- unknown, malformed, another customer's -------------------------------------------------

my $nf = { detail => 'Job not found' };
json_response_is(patch("${pid}_99", { column_include_list => ['a'] }), 404, $nf,
	'unknown index');
json_response_is(patch('3f9c2a10_5b7e_4d21_9a0c_12ab34cd56ef_0',
	{ column_include_list => ['a'] }), 404, $nf, 'unknown job');
json_response_is(patch("${pid}_", { column_include_list => ['a'] }), 404, $nf,
	'malformed id');
json_response_is(patch($incr, { column_include_list => ['a'] }, $other), 404, $nf,
	"another customer's job");
json_response_is(patch($incr, { incremental_column_value => $BOOKMARK }, $other), 404,
	$nf, "another customer's job, bookmark");
is(job_row($incr)->{column_include_list}, undef, "another customer's: nothing written");
is(bookmark($incr), '2024-02-29', "another customer's: bookmark kept");

done_testing;
