#!/usr/bin/perl
# singer connector: the first run loads every record of the fixture tap and
# saves its STATE; the second run hands that state to the tap (--state) and
# loads only the new records; reset-state makes the next run a full sync,
# which replaces rows by key instead of duplicating them.  Column types come
# from the stream's JSON Schema.

use strict;
use warnings;

use File::Temp qw(tempdir);
use Test::More;

use ConnectorFixture;
use JobsFixture;
use SluiceTest;

my ($token, $cid) = customer_token('demo');
my $LOGICAL = 't70_singer';
my $SCHEMA = wh_schema($cid, $LOGICAL);    # the demo customer's own database
drop_schema($SCHEMA);

my $dir = tempdir(CLEANUP => 1);
chmod 0755, $dir;
my $src = "$dir/records.jsonl";

sub rec {
	my ($id, %o) = @_;
	return { id => $id, name => $o{name} // "n$id", amount => $id + 0.5,
		 active => ($id % 2 ? JSON::PP::true : JSON::PP::false),
		 updated_at => sprintf('2026-01-02T03:04:%02d.25+02:00', $id),
		 day => '2026-03-0' . ($id % 9 + 1), tags => [ "t$id", 'x' ] };
}

sub write_records {
	my (@recs) = @_;
	open my $fh, '>', $src or die "$src: $!";
	print {$fh} json_encode($_), "\n" for @recs;
	close $fh;
}

write_records(map { rec($_) } 1 .. 5);
my $p = make_pipeline($token, [ {
	input => { connector => 'singer', plugin => 'tap-fixture', table_name => 'items',
		   config => { source => $src, state_every => 2 } },
	table_name => 'items', table_schema => $LOGICAL } ]);
my ($pid, $jid) = ($p->{pipeline_id}, $p->{job_ids}[0]);
my $T = "`$SCHEMA`.`items`";

# --- first run: everything ------------------------------------------------
my $run = run_pipeline($token, $cid, $pid);
is($run->{status}, 'SUCCESS', 'first run: SUCCESS')
	or diag(log_text($token, $run->{run_id}));
is($run->{rows_loaded}, 5, 'first run: 5 rows loaded');
is(wh_count($T), 5, 'first run: the table holds the 5 records');

my $cols = wh_columns($SCHEMA, 'items');
is_deeply({ map { $_ => $cols->{$_}{type} } keys %$cols },
	{ id => 'bigint(20)', name => 'longtext', amount => 'double',
	  active => 'tinyint(1)', updated_at => 'datetime(6)', day => 'date',
	  tags => 'longtext' }, 'columns typed from the JSON Schema');
is($cols->{id}{key}, 'PRI', 'key_properties are the primary key');
ok(!$cols->{id}{nullable}, 'the key column is NOT NULL');
ok($cols->{name}{nullable} && $cols->{updated_at}{nullable},
	'["null", ...] columns are nullable');

my @r = wh_rows("SELECT id, name, amount, active, updated_at, day, tags FROM $T "
	. 'WHERE id IN (1, 2) ORDER BY id');
is_deeply(\@r, [
	[ 1, 'n1', '1.5', 1, '2026-01-02 01:04:01.250000', '2026-03-02', '["t1","x"]' ],
	[ 2, 'n2', '2.5', 0, '2026-01-02 01:04:02.250000', '2026-03-03', '["t2","x"]' ],
], 'values: date-time converted to UTC, booleans 1/0, arrays as JSON');

my $st = job_state_row($jid);
is_deeply($st->{state}, { bookmarks => { items => { replication_key => 'id',
	replication_key_value => 5 } } }, 'the last STATE is the job state');

my $logs = log_text($token, $run->{run_id});
like($logs, qr/^INFO state before: none \(full sync\)$/m, 'log: no state before');
like($logs, qr/^INFO tap: tap-fixture: 5 of 5 records after bookmark none$/m,
	'log: the tap\'s stderr line');
like($logs, qr/^INFO stream items: 7 columns, rows upserted by key_properties; table \Q$SCHEMA\E\.items created$/m,
	'log: the table made for the stream');
like($logs, qr/^INFO committed 5 rows .*"replication_key_value":5/m,
	'log: the commit with its state');
unlike($logs, qr/^(ERROR|WARNING)/m, 'log: no warnings or errors');

# --- second run: only what is new -----------------------------------------
write_records(map { rec($_) } 1 .. 8);
$run = run_pipeline($token, $cid, $pid);
is($run->{status}, 'SUCCESS', 'second run: SUCCESS')
	or diag(log_text($token, $run->{run_id}));
is($run->{rows_loaded}, 3, 'second run: only the 3 new records');
is(wh_count($T), 8, 'second run: 8 rows');
$logs = log_text($token, $run->{run_id});
like($logs, qr/^INFO state before: \{"bookmarks":\{"items":\{"replication_key":"id","replication_key_value":5\}\}\}$/m,
	'second run: the saved state was handed over');
like($logs, qr/^INFO tap: tap-fixture: 3 of 8 records after bookmark 5$/m,
	'second run: the tap read --state');
is(job_state_row($jid)->{state}{bookmarks}{items}{replication_key_value}, 8,
	'second run: the bookmark moved to 8');

# --- no new records: nothing loaded, state kept -------------------------------
$run = run_pipeline($token, $cid, $pid);
is($run->{status}, 'SUCCESS', 'third run: SUCCESS');
is($run->{rows_loaded}, 0, 'third run: nothing new');
is(wh_count($T), 8, 'third run: still 8 rows');

# --- reset-state: a full sync, rows replaced by key ------------------------------
write_records(rec(1, name => 'changed'), map { rec($_) } 2 .. 8);
my $res = http(POST => "/platform/jobs/$jid/reset-state", { token => $token });
is($res->{status}, 200, 'reset-state: 200');
is(job_state_row($jid)->{state}, undef, 'reset-state: the state is gone');
$run = run_pipeline($token, $cid, $pid);
is($run->{status}, 'SUCCESS', 'after reset: SUCCESS')
	or diag(log_text($token, $run->{run_id}));
is($run->{rows_loaded}, 8, 'after reset: a full sync (8 records)');
is(wh_count($T), 8, 'after reset: still one row per key');
is(scalar mysql("SELECT name FROM $T WHERE id = 1"), 'changed',
	'after reset: the row holds the latest values');
$logs = log_text($token, $run->{run_id});
like($logs, qr/^INFO state before: none \(full sync\)$/m, 'after reset: no --state');
like($logs, qr/^INFO stream items: .*table \Q$SCHEMA\E\.items exists/m,
	'after reset: the existing table is reused');
is(job_state_row($jid)->{state}{bookmarks}{items}{replication_key_value}, 8,
	'after reset: new bookmark written');

drop_schema($SCHEMA);
done_testing();
