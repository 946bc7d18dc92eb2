#!/usr/bin/perl
# file_storage connector: three files under the prefix are all loaded into
# a table typed from the first one; an added file is loaded alone; a
# modified file (new time, or same time and another size) replaces its
# rows, so nothing is duplicated; reset-state reprocesses everything, again
# without duplicates.  Hidden files, other formats, files outside the
# prefix and symbolic links are left alone.

use strict;
use warnings;

use Test::More;

use ConnectorFixture;
use JobsFixture;
use SluiceTest;

my ($token, $cid) = customer_token('demo');
my $LOGICAL = 't73_files';
my $SCHEMA = wh_schema($cid, $LOGICAL);    # the demo customer's own database
drop_schema($SCHEMA);
my $area = storage_area($cid);
my $base = "$area/t73";
system('rm', '-rf', $base, "$area/t73-outside.csv");
my $T = "`$SCHEMA`.`events`";
my $t0 = time - 1000;

my $HEAD = "id,name,amount,active,created_at,day\n";
put_file("$base/exports/a.csv", $HEAD
	. "1,alpha,1.50,true,2026-01-02T03:04:05Z,2026-01-02\n"
	. "2,beta,2.25,false,2026-01-02T05:04:05+02:00,2026-01-03\n"
	. "3,gamma,,true,,\n", $t0);
put_file("$base/exports/b.csv", $HEAD
	. "4,delta,4.00,false,2026-02-01 10:00:00,2026-02-01\n"
	. "5,\"eps, ilon\",5.5,true,2026-02-01 11:00:00,2026-02-02\n", $t0 + 1);
put_file("$base/exports/sub/c.jsonl",
	json_encode({ id => 6, name => 'zeta', amount => 6.75, active => JSON::PP::true,
		      created_at => '2026-03-01T00:00:00Z', day => '2026-03-01' }) . "\n"
	. json_encode({ id => 7, name => 'eta', amount => 7, active => JSON::PP::false,
		      created_at => '2026-03-02T00:00:00Z', day => '2026-03-02' }) . "\n", $t0 + 2);
# Not to be loaded:
put_file("$base/exports/.sluice-partial-d.csv", $HEAD . "99,partial,1,true,,\n", $t0);
put_file("$base/exports/.hidden/e.csv", $HEAD . "98,hidden,1,true,,\n", $t0);
put_file("$base/exports/notes.pdf", "%PDF-1.4\n", $t0);
put_file("$base/other/f.csv", $HEAD . "97,other,1,true,,\n", $t0);
put_file("$area/t73-outside.csv", $HEAD . "96,outside,1,true,,\n", $t0);
symlink("$area/t73-outside.csv", "$base/exports/link.csv") or die "symlink: $!";

my $p = make_pipeline($token, [ {
	input => { connector => 'file_storage', plugin => 'local', prefix => 't73/exports/' },
	table_name => 'events', table_schema => $LOGICAL } ]);
my ($pid, $jid) = ($p->{pipeline_id}, $p->{job_ids}[0]);

sub ids {
	return join ',', map { $_->[0] } mysql("SELECT id FROM $T ORDER BY id");
}

sub per_file {
	return { map { $_->[0] => $_->[1] }
		 mysql("SELECT _source_file, COUNT(*) FROM $T GROUP BY _source_file") };
}

# --- three files: all loaded ---------------------------------------------------
my $run = run_pipeline($token, $cid, $pid);
is($run->{status}, 'SUCCESS', 'first run: SUCCESS') or diag(log_text($token, $run->{run_id}));
is($run->{rows_loaded}, 7, 'first run: 7 rows loaded');
is(ids(), '1,2,3,4,5,6,7', 'first run: the rows of the three files, nothing else');
is_deeply(per_file(), { 't73/exports/a.csv' => 3, 't73/exports/b.csv' => 2,
	't73/exports/sub/c.jsonl' => 2 }, 'first run: _source_file is the path in the area');

my $cols = wh_columns($SCHEMA, 'events');
is_deeply({ map { $_ => $cols->{$_}{type} } keys %$cols }, {
	id => 'bigint(20)', name => 'longtext', amount => 'decimal(38,6)',
	active => 'tinyint(1)', created_at => 'datetime(6)', day => 'date',
	_source_file => 'varchar(1024)', _source_row => 'bigint(20)' },
	'table typed from the first file, plus _source_file and _source_row');
is_deeply([ wh_rows("SELECT name, amount, active, created_at, day, _source_row FROM $T "
	. 'WHERE id IN (2, 3, 5) ORDER BY id') ], [
	[ 'beta', '2.250000', 0, '2026-01-02 03:04:05.000000', '2026-01-03', 2 ],
	[ 'gamma', undef, 1, undef, undef, 3 ],
	[ 'eps, ilon', '5.500000', 1, '2026-02-01 11:00:00.000000', '2026-02-02', 2 ],
], 'values: booleans 1/0, ISO times in UTC, empty cells NULL, quoted CSV');

my $proc = processed_rows($jid);
is_deeply([ sort keys %$proc ], [ 't73/exports/a.csv', 't73/exports/b.csv',
	't73/exports/sub/c.jsonl' ], 'first run: one processed record per file');
is($proc->{'t73/exports/b.csv'}[1], -s "$base/exports/b.csv", 'record: the file size');
my @gm = gmtime($t0 + 1);
is($proc->{'t73/exports/b.csv'}[0], sprintf('%04d-%02d-%02d %02d:%02d:%02d.000',
	$gm[5] + 1900, $gm[4] + 1, @gm[3, 2, 1, 0]), 'record: the last-modified time (UTC)');

my $logs = log_text($token, $run->{run_id});
like($logs, qr/^INFO 4 files under prefix 't73\/exports\/' into \Q$SCHEMA\E\.events$/m,
	'log: the files found (the symlink and hidden names not among them)');
like($logs, qr/^WARNING t73\/exports\/notes\.pdf: not a format this connector loads/m,
	'log: the PDF is skipped');
like($logs, qr/^WARNING 1 symbolic links under the prefix are not followed$/m,
	'log: the symbolic link is not followed');
like($logs, qr/^INFO t73\/exports\/a\.csv: 3 rows loaded$/m, 'log: each file');
like($logs, qr/^INFO files: 3 loaded, 0 unchanged since they were processed, 0 failed; 7 rows written$/m,
	'log: the totals');

# --- nothing changed: nothing loaded ------------------------------------------------
$run = run_pipeline($token, $cid, $pid);
is($run->{status}, 'SUCCESS', 'unchanged: SUCCESS');
is($run->{rows_loaded}, 0, 'unchanged: nothing loaded');
like(log_text($token, $run->{run_id}), qr/^INFO files: 0 loaded, 3 unchanged/m,
	'unchanged: the log says so');

# --- a new file: only it -------------------------------------------------------------
put_file("$base/exports/d.csv", $HEAD . "8,theta,8,true,2026-04-01T00:00:00Z,2026-04-01\n"
	. "9,iota,9,false,2026-04-02T00:00:00Z,2026-04-02\n", $t0 + 3);
$run = run_pipeline($token, $cid, $pid);
is($run->{status}, 'SUCCESS', 'new file: SUCCESS');
is($run->{rows_loaded}, 2, 'new file: only its 2 rows');
is(ids(), '1,2,3,4,5,6,7,8,9', 'new file: added to the table');
like(log_text($token, $run->{run_id}), qr/^INFO files: 1 loaded, 3 unchanged/m,
	'new file: the others were not read again');

# --- a modified file: its rows replaced ----------------------------------------------
put_file("$base/exports/a.csv", $HEAD
	. "1,alpha2,1.5,true,2026-01-02T03:04:05Z,2026-01-02\n"
	. "2,beta2,2.25,false,,\n", $t0 + 50);
$run = run_pipeline($token, $cid, $pid);
is($run->{status}, 'SUCCESS', 'modified: SUCCESS');
is($run->{rows_loaded}, 2, 'modified: its 2 rows loaded');
is(ids(), '1,2,4,5,6,7,8,9', 'modified: the old version\'s rows are gone (3), none doubled');
is(scalar mysql("SELECT name FROM $T WHERE id = 2"), 'beta2', 'modified: the new values');
like(log_text($token, $run->{run_id}),
	qr/^INFO t73\/exports\/a\.csv: 2 rows loaded, replacing the 3 rows of its earlier version$/m,
	'modified: the log says what was replaced');
is(processed_rows($jid)->{'t73/exports/a.csv'}[1], -s "$base/exports/a.csv",
	'modified: its record has the new size');

# Same last-modified time, another size: also a change.
my $bmtime = (stat "$base/exports/b.csv")[9];
put_file("$base/exports/b.csv", $HEAD
	. "4,delta,4.00,false,2026-02-01 10:00:00,2026-02-01\n"
	. "5,epsilon,5.5,true,2026-02-01 11:00:00,2026-02-02\n"
	. "10,kappa,10,true,2026-02-03 11:00:00,2026-02-03\n", $bmtime);
$run = run_pipeline($token, $cid, $pid);
is($run->{rows_loaded}, 3, 'same time, new size: reloaded');
is(ids(), '1,2,4,5,6,7,8,9,10', 'same time, new size: no duplicates');

# --- reset-state: everything again, still no duplicates ---------------------------------
my $before = join ';', map { join ',', map { $_ // '' } @$_ }
	wh_rows("SELECT id, name, _source_file, _source_row FROM $T ORDER BY id");
my $res = http(POST => "/platform/jobs/$jid/reset-state", { token => $token });
is($res->{status}, 200, 'reset-state: 200');
is_deeply(processed_rows($jid), {}, 'reset-state: the records are gone');
$run = run_pipeline($token, $cid, $pid);
is($run->{status}, 'SUCCESS', 'after reset: SUCCESS');
is($run->{rows_loaded}, 9, 'after reset: every file loaded again (2 + 3 + 2 + 2 rows)');
is(join(';', map { join ',', map { $_ // '' } @$_ }
	wh_rows("SELECT id, name, _source_file, _source_row FROM $T ORDER BY id")),
	$before, 'after reset: the table is the same, nothing duplicated');
is(scalar keys %{ processed_rows($jid) }, 4, 'after reset: four records again');

system('rm', '-rf', $base, "$area/t73-outside.csv");
drop_schema($SCHEMA);
done_testing();
