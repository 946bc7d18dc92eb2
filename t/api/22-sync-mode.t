#!/usr/bin/perl
# POST /platform/jobs/jdbc/{jobId}/sync-mode: the six transitions and the
# same-type cases with their state_action and effects (job columns,
# bookmark, the .qualify task, GET), each error_code with required_fields,
# each database kind's allowed and refused column types, warnings that
# block without force, 404s and customer isolation, and a database failure
# half-way that leaves nothing changed.

use strict;
use warnings;

use JSON::PP ();
use Test::More;

use JobsFixture;
use SluiceTest;

my ($token) = customer_token('demo');
my ($other) = customer_token('jobs-sync-other');

my $COL = 'updated_at';
my $TYPE = 'timestamp without time zone';
my $BOOKMARK = '2026-01-31T10:00:00Z';

my %SETTINGS = (
	full_load => { load_type => 'full_load' },
	incremental => { load_type => 'incremental', incremental_column_name => $COL,
		incremental_column_type => $TYPE },
	incremental_with_qualify => { load_type => 'incremental_with_qualify',
		incremental_column_name => $COL, incremental_column_type => $TYPE,
		primary_keys => ['id'] },
);

# One jdbc job in $from with a bookmark (also a stale one on full_load, so
# that initialize visibly clears it).
sub job_in {
	my ($from, %extra) = @_;
	my $p = seed_pipeline(token => $token, jobs => [ { %{ $SETTINGS{$from} },
		bookmark => $BOOKMARK, %extra } ]);
	return ($p->{pipeline_id}, $p->{job_ids}[0]);
}

sub sync {
	my ($job_id, $body, $tok) = @_;
	return http(POST => "/platform/jobs/jdbc/$job_id/sync-mode",
		{ token => $tok // $token, json => $body });
}

sub body_for {
	my ($target) = @_;
	my %b = (target_load_type => $target);
	$b{$_} = $SETTINGS{$target}{$_} for grep { $_ ne 'load_type' }
		keys %{ $SETTINGS{$target} };
	return \%b;
}

sub has_qualify_task {
	my ($pid, $jid) = @_;
	return scalar grep { $_ eq "$jid.qualify" } task_ids($pid);
}

# --- the six transitions of the spec --------------------------------------

for my $row (
	[ full_load => incremental => 'initialize', 0, 0 ],
	[ full_load => incremental_with_qualify => 'initialize', 0, 1 ],
	[ incremental => full_load => 'reset', 0, 0 ],
	[ incremental => incremental_with_qualify => 'preserve', 1, 1 ],
	[ incremental_with_qualify => incremental => 'preserve', 1, 0 ],
	[ incremental_with_qualify => full_load => 'reset', 0, 0 ],
) {
	my ($from, $to, $action, $kept, $task) = @$row;
	my $name = "$from -> $to";
	my ($pid, $jid) = job_in($from);
	is(!!has_qualify_task($pid, $jid), $from eq 'incremental_with_qualify',
		"$name: qualify task before");
	my $res = sync(uuid_hyphens($jid), body_for($to));
	json_response_is($res, 200, undef, $name);
	is_deeply([ sort keys %{ $res->{json} } ], [qw(message migration_details status)],
		"$name: fields");
	is($res->{json}{status}, 'success', "$name: status");
	like($res->{json}{message}, qr/\Q$jid\E: \Q$from\E to \Q$to\E\./, "$name: message");
	is_deeply($res->{json}{migration_details}, { target_load_type => $to,
		state_action => $action, warnings => [] }, "$name: migration_details");

	my $row = job_row($jid);
	is($row->{load_type}, $to, "$name: jobs.load_type");
	if ($to eq 'full_load') {
		is($row->{incremental_column_name}, undef, "$name: column cleared");
		is($row->{incremental_column_type}, undef, "$name: type cleared");
	} else {
		is($row->{incremental_column_name}, $COL, "$name: column");
		is($row->{incremental_column_type}, $TYPE, "$name: type");
	}
	is_deeply($row->{primary_keys}, $to eq 'incremental_with_qualify' ? ['id'] : undef,
		"$name: primary_keys");
	is(job_state_row($jid)->{incremental_column_value}, $kept ? $BOOKMARK : undef,
		"$name: bookmark " . ($kept ? 'kept' : 'cleared'));
	is(!!has_qualify_task($pid, $jid), !!$task, "$name: qualify task "
		. ($task ? 'present' : 'absent'));

	my $job = job_get($token, $jid);
	is($job->{input}{load_type}, $to, "$name: GET load_type");
	is($job->{input}{incremental_column_value}, $kept ? $BOOKMARK : undef,
		"$name: GET bookmark");
	my $detail = http(GET => "/platform/pipeline/$pid", { token => $token })->{json};
	my ($qt) = grep { $_->{task_id} eq "$jid.qualify" } @{ $detail->{tasks} };
	if ($task) {
		is_deeply($qt, { task_id => "$jid.qualify", job_id => $jid, kind => 'qualify',
			upstream_task_ids => ["$jid.extract_load"] }, "$name: GET qualify task");
	} else {
		ok(!$qt, "$name: GET lists no qualify task");
	}
}

# --- same type -------------------------------------------------------------------

for my $type (sort keys %SETTINGS) {
	my ($pid, $jid) = job_in($type);
	my $before = job_row($jid);
	my @tasks = task_ids($pid);
	my $res = sync($jid, body_for($type));
	json_response_is($res, 200, undef, "$type -> $type");
	is($res->{json}{migration_details}{state_action}, 'preserve', "$type -> $type: preserve");
	is(scalar @{ $res->{json}{migration_details}{warnings} }, 1, "$type -> $type: one warning");
	like($res->{json}{migration_details}{warnings}[0], qr/nothing changed/,
		"$type -> $type: the warning says nothing changed");
	is_deeply(job_row($jid), $before, "$type -> $type: job unchanged");
	is(job_state_row($jid)->{incremental_column_value}, $BOOKMARK,
		"$type -> $type: bookmark kept");
	is_deeply([ task_ids($pid) ], \@tasks, "$type -> $type: tasks unchanged");
}

# The incremental column changes: reset.
for my $type (qw(incremental incremental_with_qualify)) {
	my ($pid, $jid) = job_in($type);
	my $res = sync($jid, { %{ body_for($type) }, incremental_column_name => 'id',
		incremental_column_type => 'bigint' });
	json_response_is($res, 200, undef, "$type -> $type, another column");
	is($res->{json}{migration_details}{state_action}, 'reset', "$type column change: reset");
	like($res->{json}{migration_details}{warnings}[0],
		qr/changed from 'updated_at' to 'id'/, "$type column change: warning");
	is(job_row($jid)->{incremental_column_name}, 'id', "$type column change: column");
	is(job_row($jid)->{incremental_column_type}, 'bigint', "$type column change: type");
	is(job_state_row($jid)->{incremental_column_value}, undef,
		"$type column change: bookmark cleared");
	is(!!has_qualify_task($pid, $jid), $type eq 'incremental_with_qualify',
		"$type column change: qualify task as before");
}

# incremental -> incremental_with_qualify on another column: reset too.
{
	my ($pid, $jid) = job_in('incremental');
	my $res = sync($jid, { target_load_type => 'incremental_with_qualify',
		incremental_column_name => 'id', incremental_column_type => 'bigint',
		primary_keys => ['id'] });
	is($res->{json}{migration_details}{state_action}, 'reset',
		'incremental -> qualify, another column: reset');
	is(job_state_row($jid)->{incremental_column_value}, undef, '... bookmark cleared');
	ok(has_qualify_task($pid, $jid), '... qualify task added');
}

# --- error codes ----------------------------------------------------------------------

sub validation_is {
	my ($res, $errors, $required, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($res->{status}, 400, "$name: 400") or diag(describe($res));
	my $d = $res->{json}{detail} || {};
	is_deeply([ sort keys %$d ], [qw(error message required_fields validation_errors)],
		"$name: detail fields");
	is($d->{error}, 'ValidationError', "$name: error");
	is($d->{message}, 'Migration validation failed', "$name: message");
	is_deeply([ map { [ $_->{field}, $_->{error_code} ] } @{ $d->{validation_errors} } ],
		$errors, "$name: validation_errors");
	ok(!(grep { !defined $_->{message} || $_->{message} eq '' }
		@{ $d->{validation_errors} }), "$name: every error has a message");
	is_deeply($d->{required_fields}, $required, "$name: required_fields");
	return $d;
}

{
	my ($pid, $jid) = job_in('full_load');
	my $before = job_row($jid);

	validation_is(sync($jid, { target_load_type => 'incremental' }),
		[ [ incremental_column_name => 'MISSING_INCREMENTAL_COLUMN_NAME' ],
		  [ incremental_column_type => 'MISSING_INCREMENTAL_COLUMN_TYPE' ] ],
		[qw(incremental_column_name incremental_column_type)], 'both missing');
	validation_is(sync($jid, { target_load_type => 'incremental',
		incremental_column_type => 'date' }),
		[ [ incremental_column_name => 'MISSING_INCREMENTAL_COLUMN_NAME' ] ],
		[qw(incremental_column_name incremental_column_type)], 'name missing');
	validation_is(sync($jid, { target_load_type => 'incremental',
		incremental_column_name => $COL }),
		[ [ incremental_column_type => 'MISSING_INCREMENTAL_COLUMN_TYPE' ] ],
		[qw(incremental_column_name incremental_column_type)], 'type missing');
	my $d = validation_is(sync($jid, { target_load_type => 'incremental',
		incremental_column_name => $COL, incremental_column_type => 'varchar' }),
		[ [ incremental_column_type => 'INVALID_INCREMENTAL_COLUMN_TYPE' ] ],
		[], 'invalid type');
	like($d->{validation_errors}[0]{message},
		qr/timestamp with time zone, timestamp without time zone, date, integer, bigint, smallint, serial, bigserial/,
		'invalid type: the message lists the allowed types');
	validation_is(sync($jid, { target_load_type => 'incremental_with_qualify',
		incremental_column_name => $COL, incremental_column_type => 'date' }),
		[ [ primary_keys => 'MISSING_PRIMARY_KEYS' ] ],
		[qw(incremental_column_name incremental_column_type primary_keys)],
		'primary keys missing');
	validation_is(sync($jid, { target_load_type => 'incremental_with_qualify',
		incremental_column_name => $COL, incremental_column_type => 'date',
		primary_keys => [] }),
		[ [ primary_keys => 'MISSING_PRIMARY_KEYS' ] ],
		[qw(incremental_column_name incremental_column_type primary_keys)],
		'primary keys empty');
	validation_is(sync($jid, {}),
		[ [ target_load_type => 'MISSING_TARGET_LOAD_TYPE' ] ], [], 'no target');
	validation_is(sync($jid, { target_load_type => 'append' }),
		[ [ target_load_type => 'INVALID_TARGET_LOAD_TYPE' ] ], [], 'unknown target');
	validation_is(sync($jid, { target_load_type => 'full_load', mode => 'x' }),
		[ [ mode => 'UNKNOWN_FIELD' ] ], [], 'unknown field');
	validation_is(sync($jid, { target_load_type => 'full_load', force => 'yes' }),
		[ [ force => 'INVALID_TYPE' ] ], [], 'force not boolean');
	validation_is(sync($jid, { target_load_type => 'incremental',
		incremental_column_name => 'x' x 256, incremental_column_type => 'date' }),
		[ [ incremental_column_name => 'OUT_OF_RANGE' ] ], [], 'name too long');
	is_deeply(job_row($jid), $before, 'validation errors: nothing written');

	my $res = http(POST => "/platform/jobs/jdbc/$jid/sync-mode", { token => $token,
		body => '{"target_load_type":', content_type => 'application/json' });
	is($res->{status}, 400, 'malformed JSON: 400');
	like($res->{json}{detail}, qr/Malformed JSON/, 'malformed JSON: detail');
}

# INVALID_CONNECTOR_TYPE for singer and file_storage jobs.
{
	my $p = seed_pipeline(token => $token, jobs => [ { connector => 'singer' },
		{ connector => 'file_storage' } ]);
	for my $i (0, 1) {
		my $jid = $p->{job_ids}[$i];
		my $conn = $i ? 'file_storage' : 'singer';
		my $d = validation_is(sync($jid, body_for('incremental')),
			[ [ plugin => 'INVALID_CONNECTOR_TYPE' ] ], [], "$conn job");
		like($d->{validation_errors}[0]{message}, qr/jdbc jobs only.*\Q$conn\E/,
			"$conn job: message");
	}
}

# --- database kinds: allowed and refused types ----------------------------------------

my %KINDS = (
	postgres => [ [ 'timestamp with time zone', 'timestamp without time zone', 'date',
		'integer', 'bigint', 'smallint', 'serial', 'bigserial' ],
		[ 'datetime', 'int', 'NUMBER', 'varchar' ] ],
	mysql => [ [ qw(datetime timestamp date int bigint smallint mediumint tinyint) ],
		[ 'integer', 'datetime2', 'timestamp with time zone', 'text' ] ],
	mariadb => [ [ qw(datetime timestamp date int bigint smallint mediumint tinyint) ],
		[ 'serial', 'NUMBER', 'smalldatetime' ] ],
	oracle => [ [ 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE',
		'TIMESTAMP WITH LOCAL TIME ZONE', 'DATE', 'NUMBER' ],
		[ 'int', 'datetime', 'bigint', 'VARCHAR2' ] ],
	sqlserver => [ [ qw(datetime datetime2 smalldatetime date int bigint smallint tinyint) ],
		[ 'timestamp', 'datetimeoffset', 'mediumint', 'integer' ] ],
);

for my $plugin (sort keys %KINDS) {
	my ($allowed, $refused) = @{ $KINDS{$plugin} };
	my (undef, $jid) = job_in('full_load', plugin => $plugin);
	for my $t (@$refused) {
		my $d = validation_is(sync($jid, { target_load_type => 'incremental',
			incremental_column_name => 'c', incremental_column_type => $t }),
			[ [ incremental_column_type => 'INVALID_INCREMENTAL_COLUMN_TYPE' ] ],
			[], "$plugin refuses '$t'");
		like($d->{validation_errors}[0]{message}, qr/\Q$plugin\E/,
			"$plugin refuses '$t': message names the plugin");
		like($d->{validation_errors}[0]{message}, qr/\Q@{[ join ', ', @$allowed ]}\E/,
			"$plugin refuses '$t': message lists the allowed types");
	}
	is(job_row($jid)->{load_type}, 'full_load', "$plugin: refused types wrote nothing");
	for my $t (@$allowed) {
		# Sent in the other case: stored in the list's spelling.
		my $sent = $t =~ /[a-z]/ ? uc $t : lc $t;
		my $res = sync($jid, { target_load_type => 'incremental',
			incremental_column_name => "c_$t", incremental_column_type => $sent });
		is($res->{status}, 200, "$plugin allows '$sent'") or diag(describe($res));
		is(job_row($jid)->{incremental_column_type}, $t, "$plugin '$sent' stored as '$t'");
	}
}

# --- warnings that risk data: 409 unless force ------------------------------------------

sub blocked_is {
	my ($res, $re, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($res->{status}, 409, "$name: 409") or diag(describe($res));
	my $d = $res->{json}{detail} || {};
	is_deeply([ sort keys %$d ], [qw(error message warnings)], "$name: detail fields");
	is($d->{error}, 'MigrationWarning', "$name: error");
	like($d->{message}, qr/force/, "$name: message says force");
	ok((grep { /$re/ } @{ $d->{warnings} || [] }), "$name: warning");
}

{
	my ($pid, $jid) = job_in('full_load', column_include_list => [qw(id name)]);
	blocked_is(sync($jid, body_for('incremental')), qr/'updated_at' is not in/,
		'incremental column outside column_include_list');
	is(job_row($jid)->{load_type}, 'full_load', '409: nothing written');
	is(job_state_row($jid)->{incremental_column_value}, $BOOKMARK, '409: bookmark kept');
	my $res = sync($jid, { %{ body_for('incremental') }, force => JSON::PP::true });
	json_response_is($res, 200, undef, 'forced');
	is($res->{json}{migration_details}{state_action}, 'initialize', 'forced: initialize');
	like($res->{json}{migration_details}{warnings}[0], qr/'updated_at' is not in/,
		'forced: the warning is in the answer');
	is(job_row($jid)->{load_type}, 'incremental', 'forced: written');
	is(job_state_row($jid)->{incremental_column_value}, undef, 'forced: bookmark cleared');
}
{
	my ($pid, $jid) = job_in('incremental', column_include_list => [ $COL, 'name' ]);
	blocked_is(sync($jid, body_for('incremental_with_qualify')),
		qr/Primary key columns not in.*'id'/, 'primary key outside column_include_list');
	ok(!has_qualify_task($pid, $jid), '409: no qualify task');
	my $res = sync($jid, { %{ body_for('incremental_with_qualify') },
		force => JSON::PP::false });
	is($res->{status}, 409, 'force false: still 409');
	$res = sync($jid, { %{ body_for('incremental_with_qualify') },
		primary_keys => [ 'name' ] });
	json_response_is($res, 200, undef, 'keys inside the list');
	is_deeply($res->{json}{migration_details}{warnings}, [], 'keys inside: no warning');
}
{
	my ($pid, $jid) = job_in('incremental', job_status => 'RUNNING');
	blocked_is(sync($jid, body_for('full_load')), qr/RUNNING/, 'RUNNING job');
	is(job_row($jid)->{load_type}, 'incremental', 'RUNNING: nothing written');
	my $res = sync($jid, body_for('incremental'));
	is($res->{status}, 200, 'RUNNING, same type and settings: not blocked');
	$res = sync($jid, { %{ body_for('full_load') }, force => JSON::PP::true });
	json_response_is($res, 200, undef, 'RUNNING forced');
	ok((grep { /RUNNING/ } @{ $res->{json}{migration_details}{warnings} }),
		'RUNNING forced: warning in the answer');
	is(job_row($jid)->{load_type}, 'full_load', 'RUNNING forced: written');
}
{
	my ($pid, $jid) = job_in('full_load');
	my $run_id = join '', map { sprintf '%02x', int rand 256 } 1 .. 16;
	mysql(sprintf "INSERT INTO pipeline_runs (id, pipeline_id, customer_id, status) "
		. "VALUES (%s, %s, %s, 'RUNNING')", sql_quote($run_id), sql_quote($pid),
		sql_quote(env('SLUICE_DEMO_CUSTOMER_ID')));
	blocked_is(sync($jid, body_for('incremental')), qr/RUNNING/, 'job of a RUNNING run');
}

# Informational warnings never block.
{
	my ($pid, $jid) = job_in('incremental', job_status => 'SUCCESS');
	my $res = sync($jid, { target_load_type => 'full_load',
		incremental_column_name => 'x' });
	json_response_is($res, 200, undef, 'ignored fields');
	like($res->{json}{migration_details}{warnings}[0], qr/ignored/,
		'ignored fields: informational warning');
}

# --- unknown, malformed, another customer's ---------------------------------------------

{
	my ($pid, $jid) = job_in('full_load');
	my $nf = { detail => 'Job not found' };
	json_response_is(sync("${pid}_3", body_for('incremental')), 404, $nf, 'unknown index');
	json_response_is(sync('3f9c2a10_5b7e_4d21_9a0c_12ab34cd56ef_0', body_for('incremental')),
		404, $nf, 'unknown job');
	json_response_is(sync('x', body_for('incremental')), 404, $nf, 'malformed id');
	json_response_is(sync($jid, body_for('incremental'), $other), 404, $nf,
		"another customer's job");
	is(job_row($jid)->{load_type}, 'full_load', "another customer's: nothing written");
	my $res = http(POST => "/platform/jobs/jdbc/$jid/sync-mode", {
		token => token(permissions => 'PLATFORM.READ'), json => body_for('incremental') });
	is($res->{status}, 403, 'PLATFORM.READ only: 403');
}

# --- a failure half-way leaves nothing changed -------------------------------------------

{
	my ($pid, $jid) = job_in('incremental');
	mysql(q{CREATE TRIGGER jobs_test_task_fail BEFORE INSERT ON orchestration_tasks
		FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'test failure'});
	my $res = sync($jid, body_for('incremental_with_qualify'));
	mysql('DROP TRIGGER jobs_test_task_fail');
	json_response_is($res, 500, { detail => 'Internal Server Error' },
		'database failure after the job update');
	is(job_row($jid)->{load_type}, 'incremental', 'failure: job update rolled back');
	is_deeply(job_row($jid)->{primary_keys}, undef, 'failure: primary_keys rolled back');
	ok(!has_qualify_task($pid, $jid), 'failure: no qualify task');
}

done_testing;
