#!/usr/bin/perl
# file_storage connector, the edges: a bad file fails the run but not the
# other files, and is retried alone once fixed; a prefix selects by path
# start; a later file with more columns widens the table; header names are
# made usable; an empty file loads no rows; a prefix through a symbolic
# link fails; a missing prefix is an empty run; another customer's run
# never sees these files.

use strict;
use warnings;

use Test::More;

use ConnectorFixture;
use JobsFixture;
use SluiceTest;

my ($token, $cid) = customer_token('demo');
my ($other, $other_cid) = customer_token('t74-other');
my $LOGICAL = 't74_files';
my $SCHEMA = wh_schema($cid, $LOGICAL);    # the demo customer's own database
drop_schema($SCHEMA);
my $area = storage_area($cid);
my $base = "$area/t74";
system('rm', '-rf', $base);
my $t0 = time - 1000;

sub files_job {
	my ($prefix, $table, %o) = @_;
	return make_pipeline($o{token} // $token, [ { input => { connector => 'file_storage',
		plugin => 'local', prefix => $prefix }, table_name => $table,
		table_schema => $LOGICAL } ]);
}

# --- a bad file among good ones ------------------------------------------------
put_file("$base/bad/1-first.csv", "id,name\n1,one\n2,two\n", $t0);
put_file("$base/bad/2-second.csv", "id,name\nabc,three\n", $t0);
put_file("$base/bad/3-broken.jsonl", "{\"id\": 4, \"name\": \"four\"}\n{not json\n", $t0);
put_file("$base/bad/4-fourth.csv", "id,name\n5,five\n", $t0);
my $p = files_job('t74/bad/', 'bad');
my $jid = $p->{job_ids}[0];
my $run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'FAILED', 'bad files: the run FAILED');
my $errors = log_text($token, $run->{run_id}, level => 'ERROR');
like($errors, qr/^ERROR t74\/bad\/2-second\.csv: column id: the source's type LONGTEXT does not fit BIGINT/m,
	'bad files: an ERROR line names the file and the column its values do not fit')
	or diag(log_text($token, $run->{run_id}));
like($errors, qr/^ERROR t74\/bad\/3-broken\.jsonl: line 2: invalid JSON/m,
	'bad files: an ERROR line names the unreadable file and its line');
like($errors, qr/^ERROR .*2 files failed to load; first: t74\/bad\/2-second\.csv/m,
	'bad files: the run\'s error counts them');
is(join(',', map { $_->[0] } mysql("SELECT id FROM `$SCHEMA`.`bad` ORDER BY id")), '1,2,5',
	'bad files: the good files are loaded, nothing of the bad ones');
is_deeply([ sort keys %{ processed_rows($jid) } ],
	[ 't74/bad/1-first.csv', 't74/bad/4-fourth.csv' ],
	'bad files: only the loaded files are recorded');
put_file("$base/bad/2-second.csv", "id,name\n3,three\n", $t0 + 10);
unlink "$base/bad/3-broken.jsonl";
$run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'fixed: SUCCESS') or diag(log_text($token, $run->{run_id}));
is($run->{rows_loaded}, 1, 'fixed: only the fixed file is loaded');
is(join(',', map { $_->[0] } mysql("SELECT id FROM `$SCHEMA`.`bad` ORDER BY id")), '1,2,3,5',
	'fixed: its row is in');

# --- a prefix is a path start, not only a folder ------------------------------------
put_file("$base/np/2026-01.csv", "id\n1\n", $t0);
put_file("$base/np/2026-02/x.csv", "id\n2\n", $t0);
put_file("$base/np/2025-12.csv", "id\n3\n", $t0);
put_file("$base/np/2026-03.csv", '', $t0);
$p = files_job('t74/np/2026-', 'np');
$run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'name prefix: SUCCESS') or diag(log_text($token, $run->{run_id}));
is(join(',', map { $_->[0] } mysql("SELECT id FROM `$SCHEMA`.`np` ORDER BY id")), '1,2',
	'name prefix: 2026-01.csv and 2026-02/x.csv, not 2025-12.csv');
is(scalar keys %{ processed_rows($p->{job_ids}[0]) }, 3,
	'name prefix: the empty file is recorded too (no rows)');
like(log_text($token, $run->{run_id}), qr/^INFO t74\/np\/2026-03\.csv: 0 rows loaded$/m,
	'an empty file loads no rows and fails nothing');

# --- more columns later; header names made usable --------------------------------------
put_file("$base/cols/a.csv", "id,name\n1,one\n", $t0);
put_file("$base/cols/b.csv", "id,name,extra\n2,two,x\n", $t0 + 1);
my $long = 'L' x 70;
put_file("$base/cols/c.csv", "id, ,Name,name,_source_file,$long\n3,blank,N,n2,sf,long\n", $t0 + 2);
$p = files_job('t74/cols/', 'cols');
$run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'columns: SUCCESS') or diag(log_text($token, $run->{run_id}));
my $cols = wh_columns($SCHEMA, 'cols');
is_deeply([ sort keys %$cols ], [ sort('id', 'name', 'extra', 'column1', 'name_1',
	'_source_file_2', 'L' x 64, '_source_file', '_source_row') ],
	'columns: added by later files; empty, repeated, reserved and long names renamed');
is_deeply([ wh_rows("SELECT id, name, extra, column1, name_1, _source_file_2 "
	. "FROM `$SCHEMA`.`cols` ORDER BY id") ], [
	[ 1, 'one', undef, undef, undef, undef ],
	[ 2, 'two', 'x', undef, undef, undef ],
	[ 3, 'N', undef, 'blank', 'n2', 'sf' ],
], 'columns: each file\'s cells in their columns, NULL elsewhere');

# --- a prefix through a symbolic link; a prefix that does not exist ----------------------
symlink("$base/cols", "$base/linked") or die "symlink: $!";
$p = files_job('t74/linked/', 'linked');
$run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'FAILED', 'symlinked prefix: FAILED');
like(log_text($token, $run->{run_id}, level => 'ERROR'),
	qr/the prefix names a symbolic link or a file where a folder should be \('linked'\)/,
	'symlinked prefix: the error says so');
$p = files_job('t74/nothing-here/', 'nothing');
$run = run_pipeline($token, $cid, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'missing prefix: SUCCESS');
is($run->{rows_loaded}, 0, 'missing prefix: nothing loaded');
like(log_text($token, $run->{run_id}), qr/^INFO 0 files under prefix/m,
	'missing prefix: the log says 0 files');

# --- another customer ---------------------------------------------------------------------
$p = files_job('t74/np/2026-', 'other_np', token => $other);
$run = run_pipeline($other, $other_cid, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'other customer: SUCCESS');
is($run->{rows_loaded}, 0, 'other customer: none of the demo customer\'s files');
my $res = http(POST => '/platform/pipeline', { token => $other, json => {
	name => 'escape', cron => undef, jobs => [ { input => { connector => 'file_storage',
		plugin => 'local', prefix => "../$cid/t74/" },
		output => { plugin => 'mariadb', raw => { table_name => 'x',
		table_schema => $LOGICAL } } } ] } });
is($res->{status}, 400, 'a prefix with .. is refused at create');

system('rm', '-rf', $base);
drop_schema($SCHEMA);
drop_schema(wh_schema($other_cid, $LOGICAL));
done_testing();
