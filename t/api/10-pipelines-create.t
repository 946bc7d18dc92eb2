#!/usr/bin/perl
# POST /platform/pipeline: the 201 Pipeline field by field, what the
# database holds afterwards (jobs, job states, tasks, next_run_at), every
# validation rule with its field and error_code, the bounds at max and
# max + 1, the incremental column types of each database kind, and
# connection ownership.  A refused body writes nothing.

use strict;
use warnings;

use Test::More;
use Time::Local qw(timegm_modern);

use SluiceTest;

my $token = env('SLUICE_DEMO_TOKEN');
my $cid = env('SLUICE_DEMO_CUSTOMER_ID');
my $PID_RE = qr/^[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12}$/;

sub create {
	my ($body, $tok) = @_;
	return http(POST => '/platform/pipeline', { token => $tok // $token, json => $body });
}

sub jdbc_job {
	my (%in) = @_;
	return { input => { connector => 'jdbc', plugin => 'postgres',
			    table_name => 'public.orders', %in },
		 output => { plugin => 'mariadb',
			     raw => { table_name => 'orders', table_schema => 'raw' } } };
}

sub body {
	my (%o) = @_;
	return { name => 'orders', description => 'nightly orders', cron => '0 2 * * *',
		 jobs => [ jdbc_job() ], %o };
}

sub count_rows { mysql("SELECT COUNT(*) FROM $_[0]") }

# --- the 201 body, field by field -------------------------------------------

my $full = {
	name => 'orders', description => 'three connectors', cron => '0 2 * * *',
	jobs => [
		{ name => 'orders',
		  input => { connector => 'jdbc', plugin => 'postgres',
			     table_name => 'public.orders', fetch_size => 500,
			     load_type => 'incremental_with_qualify',
			     incremental_column_name => 'updated_at',
			     incremental_column_type => 'timestamp with time zone',
			     primary_keys => ['id'], column_include_list => ['id', 'updated_at'] },
		  output => { plugin => 'mariadb', raw => { table_name => 'orders', table_schema => 'raw' } },
		  memory_allocated_mb => 4096 },
		{ input => { connector => 'singer', plugin => 'tap-postgres', table_name => 'orders' },
		  output => { plugin => 'mariadb', raw => { table_name => 'orders_s', table_schema => 'raw' } } },
		{ input => { connector => 'file_storage', plugin => 'local', prefix => 'exports/2026/' },
		  output => { plugin => 'mariadb', raw => { table_name => 'files', table_schema => 'raw' } } },
	],
};
my $res = create($full);
json_response_is($res, 201, undef, 'create with three connectors');
my $p = $res->{json};
my $pid = $p->{pipeline_id} // '';
like($pid, $PID_RE, 'pipeline_id is a UUID with underscores');
like($p->{id}, qr/^[1-9]\d*$/, 'id is a positive integer');
is_deeply([ sort keys %$p ],
	  [ sort qw(id pipeline_id customer_id user_id name description cron last_status jobs) ],
	  'exactly the Pipeline fields');
is($p->{customer_id}, $cid, 'customer_id is the token\'s');
is($p->{user_id}, 'demo@example.com', 'user_id is the token\'s sub');
is($p->{name}, 'orders', 'name');
is($p->{description}, 'three connectors', 'description');
is($p->{cron}, '0 2 * * *', 'cron');
is($p->{last_status}, 'PENDING', 'last_status PENDING');
is(scalar @{ $p->{jobs} }, 3, 'three jobs');
for my $i (0 .. 2) {
	my $j = $p->{jobs}[$i];
	is($j->{job_id}, "${pid}_$i", "job $i: job_id {pipeline_id}_$i");
	like($j->{id}, qr/^[1-9]\d*$/, "job $i: id is a positive integer");
	is($j->{job_status}, 'PENDING', "job $i: job_status PENDING");
}
is_deeply($p->{jobs}[0], {
	id => $p->{jobs}[0]{id}, job_id => "${pid}_0", job_status => 'PENDING',
	input => { connector => 'jdbc', plugin => 'postgres', table_name => 'public.orders',
		   fetch_size => 500, load_type => 'incremental_with_qualify',
		   incremental_column_name => 'updated_at',
		   incremental_column_type => 'timestamp with time zone',
		   primary_keys => ['id'], column_include_list => ['id', 'updated_at'] },
	output => { plugin => 'mariadb', raw => { table_name => 'orders', table_schema => 'raw' } },
	memory_allocated_mb => 4096,
}, 'job 0 whole: extra input keys kept, memory_allocated_mb when set');
is_deeply($p->{jobs}[1], {
	id => $p->{jobs}[1]{id}, job_id => "${pid}_1", job_status => 'PENDING',
	input => { connector => 'singer', plugin => 'tap-postgres', table_name => 'orders' },
	output => { plugin => 'mariadb', raw => { table_name => 'orders_s', table_schema => 'raw' } },
}, 'job 1 whole: singer, no load_type, no memory_allocated_mb');
is_deeply($p->{jobs}[2]{input},
	  { connector => 'file_storage', plugin => 'local', prefix => 'exports/2026/' },
	  'job 2 input: file_storage with its prefix');
ok($p->{jobs}[0]{id} < $p->{jobs}[1]{id} && $p->{jobs}[1]{id} < $p->{jobs}[2]{id},
   'job ids ascend with the index');

# --- what the database holds --------------------------------------------------

my ($row) = mysql("SELECT customer_id, created_by, paused, last_status, "
	. "DATE_FORMAT(next_run_at, '%Y-%m-%dT%H:%i:%s') FROM pipelines WHERE id = '$pid'");
is_deeply([ @$row[0 .. 3] ], [ $cid, 'demo@example.com', 0, 'PENDING' ], 'pipelines row');
my @t = gmtime(time + 60);
my $next = timegm_modern(0, 0, 2, $t[3], $t[4], $t[5] + 1900);
$next += 86400 if $next <= time;
my @n = gmtime($next);
is($row->[4], sprintf('%04d-%02d-%02dT02:00:00', $n[5] + 1900, $n[4] + 1, $n[3]),
   'next_run_at is the next 02:00 UTC');
my @jobs = mysql("SELECT id, job_index, connector, load_type, "
	. "IFNULL(incremental_column_name, '-'), IFNULL(primary_keys, '-'), "
	. "IFNULL(memory_allocated_mb, '-'), input FROM jobs WHERE pipeline_id = '$pid' ORDER BY job_index");
is(scalar @jobs, 3, 'three job rows');
is_deeply([ @{ $jobs[0] }[0 .. 6] ],
	  [ "${pid}_0", 0, 'jdbc', 'incremental_with_qualify', 'updated_at', '["id"]', 4096 ],
	  'job 0 row: settings in their columns');
is_deeply(json_decode($jobs[0][7]),
	  { connector => 'jdbc', plugin => 'postgres', table_name => 'public.orders', fetch_size => 500 },
	  'job 0 stored input: the column-held keys removed');
is_deeply([ @{ $jobs[1] }[0 .. 6] ], [ "${pid}_1", 1, 'singer', 'full_load', '-', '-', '-' ],
	  'job 1 row');
is(mysql("SELECT COUNT(*) FROM job_state WHERE job_id LIKE '${pid}\\_%' "
	 . "AND incremental_column_value IS NULL AND state IS NULL"), 3,
   'one empty job_state row per job');
my @tasks = mysql("SELECT task_id, job_id, kind, upstream_task_ids, position "
	. "FROM orchestration_tasks WHERE pipeline_id = '$pid' ORDER BY position");
is_deeply(\@tasks, [
	[ "${pid}_0.extract_load", "${pid}_0", 'extract_load', '[]', 0 ],
	[ "${pid}_0.qualify", "${pid}_0", 'qualify', "[\"${pid}_0.extract_load\"]", 1 ],
	[ "${pid}_1.extract_load", "${pid}_1", 'extract_load', '[]', 2 ],
	[ "${pid}_2.extract_load", "${pid}_2", 'extract_load', '[]', 4 ],
], 'tasks: extract_load per job, qualify after it for incremental_with_qualify');

# --- defaults -------------------------------------------------------------------

$res = create({ name => 'manual', cron => undef, jobs => [ jdbc_job() ] });
json_response_is($res, 201, undef, 'cron null, no description');
is($res->{json}{cron}, undef, 'cron is null');
is($res->{json}{description}, '', 'description defaults to ""');
is($res->{json}{jobs}[0]{input}{load_type}, 'full_load', 'jdbc load_type defaults to full_load');
my $manual = $res->{json}{pipeline_id};
is(mysql("SELECT IFNULL(next_run_at, 'NULL') FROM pipelines WHERE id = '$manual'"), 'NULL',
   'no cron: next_run_at NULL');

$res = create(body(jobs => [ jdbc_job(load_type => 'incremental',
	incremental_column_name => 'id', incremental_column_type => 'BIGINT') ]));
json_response_is($res, 201, undef, 'incremental job');
is($res->{json}{jobs}[0]{input}{incremental_column_type}, 'bigint',
   'column type compared case-insensitively, stored in the list\'s spelling');
is(mysql("SELECT COUNT(*) FROM orchestration_tasks WHERE pipeline_id = '$res->{json}{pipeline_id}'"),
   1, 'incremental: no qualify task');

# --- validation: field and error_code of each rule ------------------------------

sub refused {
	my ($body, $field, $code, $name, $msg_re) = @_;
	my $before = count_rows('pipelines');
	my $res = create($body);
	my $ok = json_response_is($res, 400, undef, $name);
	my $d = ref $res->{json} eq 'HASH' ? $res->{json}{detail} : undef;
	$ok &&= is(ref $d, 'HASH', "$name: detail is an object");
	return unless $ok;
	is($d->{error}, 'ValidationError', "$name: error ValidationError");
	is($d->{message}, 'Pipeline validation failed', "$name: message");
	is(ref $d->{required_fields}, 'ARRAY', "$name: required_fields is an array");
	my ($e) = grep { $_->{field} eq $field } @{ $d->{validation_errors} || [] };
	ok($e, "$name: an error for $field") or return diag describe($res);
	is($e->{error_code}, $code, "$name: error_code $code") or diag describe($res);
	ok(length $e->{message}, "$name: a message");
	like($e->{message}, $msg_re, "$name: message says why") if $msg_re;
	is(count_rows('pipelines'), $before, "$name: nothing written");
	return $d;
}

my $job = jdbc_job();
my %in = %{ $job->{input} };
my $out = $job->{output};
sub with_input { { name => 'x', jobs => [ { input => { %in, @_ }, output => $out } ] } }
sub without_input {
	my %i = %in;
	delete $i{$_} for @_;
	return { name => 'x', jobs => [ { input => \%i, output => $out } ] };
}
sub with_output { { name => 'x', jobs => [ { input => \%in, output => $_[0] } ] } }

my $d = refused({ jobs => [ $job ] }, 'name', 'MISSING_FIELD', 'no name');
is_deeply($d->{required_fields}, ['name'], 'required_fields names the missing field') if $d;
refused(body(name => ''), 'name', 'OUT_OF_RANGE', 'empty name');
refused(body(name => 'n' x 256), 'name', 'OUT_OF_RANGE', 'name of 256');
refused(body(name => 42), 'name', 'INVALID_TYPE', 'name a number');
refused(body(description => 'd' x 4097), 'description', 'OUT_OF_RANGE', 'description of 4097');
refused(body(description => []), 'description', 'INVALID_TYPE', 'description an array');
refused(body(color => 'red'), 'color', 'UNKNOWN_FIELD', 'unknown top-level field');
refused(body(cron => '61 * * * *'), 'cron', 'INVALID_CRON', 'cron minute 61',
	qr/minute: 61 is out of range 0-59/);
refused(body(cron => '* * * *'), 'cron', 'INVALID_CRON', 'cron of 4 fields', qr/5 fields/);
refused(body(cron => '0 0 30 2 *'), 'cron', 'INVALID_CRON', 'cron on Feb 30');
refused(body(cron => ''), 'cron', 'OUT_OF_RANGE', 'empty cron');
refused(body(cron => 5), 'cron', 'INVALID_TYPE', 'cron a number');
refused(body(jobs => undef), 'jobs', 'MISSING_FIELD', 'jobs null');
refused(body(jobs => []), 'jobs', 'OUT_OF_RANGE', 'no jobs');
refused(body(jobs => [ ($job) x 101 ]), 'jobs', 'OUT_OF_RANGE', '101 jobs');
refused(body(jobs => { a => 1 }), 'jobs', 'INVALID_TYPE', 'jobs an object');
refused(body(jobs => [ 'x' ]), 'jobs[0]', 'INVALID_TYPE', 'job a string');
refused(body(jobs => [ { %$job, extra => 1 } ]), 'jobs[0].extra', 'UNKNOWN_FIELD', 'unknown job field');
refused(body(jobs => [ { %$job, name => 'n' x 256 } ]), 'jobs[0].name', 'OUT_OF_RANGE', 'job name of 256');
refused(body(jobs => [ { output => $out } ]), 'jobs[0].input', 'MISSING_FIELD', 'no input');
refused(body(jobs => [ { input => \%in } ]), 'jobs[0].output', 'MISSING_FIELD', 'no output');
refused(body(jobs => [ $job, { %$job, memory_allocated_mb => 0 } ]),
	'jobs[1].memory_allocated_mb', 'OUT_OF_RANGE', 'memory 0 (second job)');
refused(body(jobs => [ { %$job, memory_allocated_mb => 12001 } ]),
	'jobs[0].memory_allocated_mb', 'OUT_OF_RANGE', 'memory above the maximum');
refused(body(jobs => [ { %$job, memory_allocated_mb => '4096' } ]),
	'jobs[0].memory_allocated_mb', 'INVALID_TYPE', 'memory a string');
refused(without_input('connector'), 'jobs[0].input.connector', 'MISSING_FIELD', 'no connector');
refused(with_input(connector => 'ftp'), 'jobs[0].input.connector', 'INVALID_CONNECTOR_TYPE', 'connector ftp');
refused(without_input('plugin'), 'jobs[0].input.plugin', 'MISSING_FIELD', 'no plugin');
refused(with_input(plugin => ''), 'jobs[0].input.plugin', 'OUT_OF_RANGE', 'empty plugin');
refused(with_input(plugin => 'db2'), 'jobs[0].input.plugin', 'INVALID_PLUGIN', 'jdbc plugin db2');
refused(without_input('table_name'), 'jobs[0].input.table_name', 'MISSING_FIELD', 'jdbc without table_name');
refused(with_input(table_name => 't' x 256), 'jobs[0].input.table_name', 'OUT_OF_RANGE', 'table_name of 256');
refused({ name => 'x', jobs => [ { input => { connector => 'singer', plugin => 'tap-x' }, output => $out } ] },
	'jobs[0].input.table_name', 'MISSING_FIELD', 'singer without table_name');
refused({ name => 'x', jobs => [ { input => { connector => 'file_storage', plugin => 'local' }, output => $out } ] },
	'jobs[0].input.prefix', 'MISSING_FIELD', 'file_storage without prefix');
for my $bad ('../x', 'a/../b', '/abs', 'a\\b') {
	refused({ name => 'x', jobs => [ { input => { connector => 'file_storage', plugin => 'local',
		prefix => $bad }, output => $out } ] },
		'jobs[0].input.prefix', 'INVALID_VALUE', "file_storage prefix '$bad'");
}
refused({ name => 'x', jobs => [ { input => { connector => 'singer', plugin => 'tap-x', table_name => 't',
	load_type => 'incremental' }, output => $out } ] },
	'jobs[0].input.load_type', 'INVALID_CONNECTOR_TYPE', 'load_type on a singer job');
refused(with_input(load_type => 'delta'), 'jobs[0].input.load_type', 'INVALID_LOAD_TYPE', 'load_type delta');
refused(with_input(incremental_column_name => 'id'), 'jobs[0].input.load_type', 'INVALID_LOAD_TYPE',
	'incremental column on a full_load job');
$d = refused(with_input(load_type => 'incremental', incremental_column_type => 'bigint'),
	'jobs[0].input.incremental_column_name', 'MISSING_INCREMENTAL_COLUMN_NAME', 'incremental without column name');
is_deeply($d->{required_fields}, ['jobs[0].input.incremental_column_name'], 'required_fields') if $d;
refused(with_input(load_type => 'incremental', incremental_column_name => 'id'),
	'jobs[0].input.incremental_column_type', 'MISSING_INCREMENTAL_COLUMN_TYPE', 'incremental without column type');
refused(with_input(load_type => 'incremental_with_qualify', incremental_column_name => 'id',
	incremental_column_type => 'bigint'),
	'jobs[0].input.primary_keys', 'MISSING_PRIMARY_KEYS', 'qualify without primary_keys');
refused(with_input(load_type => 'incremental_with_qualify', incremental_column_name => 'id',
	incremental_column_type => 'bigint', primary_keys => []),
	'jobs[0].input.primary_keys', 'OUT_OF_RANGE', 'qualify with empty primary_keys');
refused(with_input(primary_keys => [ 'a', 1 ]), 'jobs[0].input.primary_keys', 'INVALID_VALUE', 'primary key a number');
refused(with_input(column_include_list => 'id'), 'jobs[0].input.column_include_list', 'INVALID_TYPE',
	'column_include_list a string');
refused(with_input(column_include_list => [ '' ]), 'jobs[0].input.column_include_list', 'INVALID_VALUE',
	'column_include_list with an empty name');
refused(with_input(column_include_list => [ ('c') x 1025 ]), 'jobs[0].input.column_include_list',
	'OUT_OF_RANGE', 'column_include_list of 1025');
refused(with_input(incremental_column_value => '2026-01-01T00:00:00Z'),
	'jobs[0].input.incremental_column_value', 'INVALID_FIELD', 'bookmark at create');
refused(with_input(connection_id => 'not-a-uuid'), 'jobs[0].input.connection_id', 'UNKNOWN_CONNECTION',
	'malformed connection_id');
refused(with_input(connection_id => '11111111-2222-4333-8444-555555555555'),
	'jobs[0].input.connection_id', 'UNKNOWN_CONNECTION', 'unknown connection_id');
refused(with_input(blob => 'x' x 17000), 'jobs[0].input', 'OUT_OF_RANGE', 'input over 16 KiB');
refused(with_output({ raw => $out->{raw} }), 'jobs[0].output.plugin', 'MISSING_FIELD', 'no output plugin');
refused(with_output({ %$out, plugin => 'snowflake' }), 'jobs[0].output.plugin', 'INVALID_PLUGIN',
	'output plugin snowflake');
refused(with_output({ plugin => 'mariadb' }), 'jobs[0].output.raw', 'MISSING_FIELD', 'no raw');
refused(with_output({ plugin => 'mariadb', raw => { table_schema => 'raw' } }),
	'jobs[0].output.raw.table_name', 'MISSING_FIELD', 'no raw.table_name');
refused(with_output({ plugin => 'mariadb', raw => { table_name => 't' } }),
	'jobs[0].output.raw.table_schema', 'MISSING_FIELD', 'no raw.table_schema');
for my $bad ('1orders', 'or-ders', 'or ders', 'x`y', 't' x 65) {
	refused(with_output({ plugin => 'mariadb', raw => { table_name => $bad, table_schema => 'raw' } }),
		'jobs[0].output.raw.table_name', $bad eq 't' x 65 ? 'OUT_OF_RANGE' : 'INVALID_VALUE',
		"raw.table_name '" . substr($bad, 0, 10) . "'");
}

# Several errors are reported together.
$d = refused({ name => '', jobs => [ { input => { connector => 'jdbc' }, output => {} } ] },
	'name', 'OUT_OF_RANGE', 'several errors');
cmp_ok(scalar @{ $d->{validation_errors} }, '>=', 4, 'all errors at once') if $d;

# Not an object.
$res = http(POST => '/platform/pipeline', { token => $token, body => '[1]',
	content_type => 'application/json' });
json_response_is($res, 400, undef, 'body an array');
is($res->{json}{detail}{error}, 'ValidationError', 'body an array: ValidationError');

# --- bounds at the maximum -----------------------------------------------------

$res = create(body(name => "\x{e9}" x 255, description => 'd' x 4096,
	jobs => [ map { jdbc_job(table_name => 't' x 255) } 1 .. 100 ]));
json_response_is($res, 201, undef, 'name of 255 characters, description of 4096, 100 jobs, table_name of 255');
is($res->{json}{name}, "\x{e9}" x 255, 'name of 255 non-ASCII characters kept');
is(scalar @{ $res->{json}{jobs} }, 100, '100 jobs');
is($res->{json}{jobs}[99]{job_id}, "$res->{json}{pipeline_id}_99", 'last job id _99');
$res = create(body(jobs => [ { %$job, memory_allocated_mb => 12000 } ]));
json_response_is($res, 201, undef, 'memory 12000 (the maximum)');
$res = create(body(jobs => [ { %$job, memory_allocated_mb => 1 } ]));
json_response_is($res, 201, undef, 'memory 1');

# --- incremental column types of each database kind ------------------------------

my %kinds = (
	postgres  => [ 'timestamp with time zone', 'timestamp without time zone', 'date', 'integer',
		       'bigint', 'smallint', 'serial', 'bigserial' ],
	mysql     => [ qw(datetime timestamp date int bigint smallint mediumint tinyint) ],
	mariadb   => [ qw(datetime timestamp date int bigint smallint mediumint tinyint) ],
	oracle    => [ 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE', 'TIMESTAMP WITH LOCAL TIME ZONE', 'DATE', 'NUMBER' ],
	sqlserver => [ qw(datetime datetime2 smalldatetime date int bigint smallint tinyint) ],
);
my %refused = (
	postgres  => [ 'datetime', 'datetime2', 'int', 'NUMBER', 'varchar' ],
	mysql     => [ 'serial', 'integer', 'datetime2', 'NUMBER', 'timestamp with time zone' ],
	mariadb   => [ 'bigserial', 'smalldatetime' ],
	oracle    => [ 'int', 'datetime', 'bigint', 'timestamp without time zone' ],
	sqlserver => [ 'serial', 'mediumint', 'timestamp', 'NUMBER' ],
);
for my $plugin (sort keys %kinds) {
	my @jobs = map { jdbc_job(plugin => $plugin, load_type => 'incremental',
		incremental_column_name => 'c', incremental_column_type => $_) } @{ $kinds{$plugin} };
	$res = create(body(jobs => \@jobs));
	json_response_is($res, 201, undef, "$plugin: every allowed type");
	is_deeply([ map { $_->{input}{incremental_column_type} } @{ $res->{json}{jobs} || [] } ],
		  $kinds{$plugin}, "$plugin: types kept");
	for my $type (@{ $refused{$plugin} }) {
		refused(with_input(plugin => $plugin, load_type => 'incremental',
			incremental_column_name => 'c', incremental_column_type => $type),
			'jobs[0].input.incremental_column_type', 'INVALID_INCREMENTAL_COLUMN_TYPE',
			"$plugin refuses '$type'", qr/allowed: \Q$kinds{$plugin}[0]\E/);
	}
}

# --- connections: the caller's only ------------------------------------------------

# Set-up: connection rows (part of the connections API, seeded here) of the
# demo customer and of another customer.
my $other_cid = '0a0a0a0a-1111-4222-8333-444444444410';
my $mine = '0b0b0b0b-1111-4222-8333-444444444410';
my $theirs = '0c0c0c0c-1111-4222-8333-444444444410';
mysql("INSERT IGNORE INTO customers (id, name) VALUES ('$other_cid', 'other-10')");
mysql("INSERT IGNORE INTO connections (id, customer_id, name, plugin, host, port, database_name, "
      . "user_name, password_enc) VALUES "
      . "('$mine', '$cid', 'mine-10', 'postgres', 'db', 5432, 'd', 'u', REPEAT('x', 40)), "
      . "('$theirs', '$other_cid', 'theirs-10', 'postgres', 'db', 5432, 'd', 'u', REPEAT('x', 40))");
$res = create(body(jobs => [ jdbc_job(connection_id => $mine) ]));
json_response_is($res, 201, undef, 'own connection_id');
is($res->{json}{jobs}[0]{input}{connection_id}, $mine, 'connection_id kept in input');
is(mysql("SELECT connection_id FROM jobs WHERE id = '$res->{json}{pipeline_id}_0'"), $mine,
   'jobs.connection_id references it');
refused(with_input(connection_id => $theirs), 'jobs[0].input.connection_id', 'UNKNOWN_CONNECTION',
	'another customer\'s connection');

# --- authentication --------------------------------------------------------------

json_response_is(http(POST => '/platform/pipeline', { json => body() }), 401, undef, 'no token');
my $ro = token(customer => 'demo', permissions => 'PLATFORM.READ');
json_response_is(create(body(), $ro), 403, undef, 'token without PLATFORM.WRITE');

done_testing;
