#!/usr/bin/perl
# Isolation and deadlines of sluice work's children: a child past its
# kind's deadline is killed and its item retried, then failed with a clear
# reason; a child that crashes fails only its own item; the loop goes on.
# And the same through a real area: an ingestion that outlives its
# deadline ends with the dataset failed, saying why.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;

use RagFixture;
use RunnerFixture qw(with_work_conf work_pid);
use SluiceTest;

sub enqueue {
	my ($kind, $ref, %o) = @_;
	mysql("INSERT INTO work_queue (kind, ref_id, tenant, payload, max_attempts) VALUES "
	      . "('$kind', '$ref', 'deadlines-$$', " . ($o{payload} ? "'$o{payload}'" : 'NULL')
	      . ', ' . ($o{attempts} // 1) . ')');
	return mysql("SELECT MAX(id) FROM work_queue WHERE ref_id = '$ref'");
}

sub item {
	my ($id) = @_;
	my ($r) = mysql("SELECT status, attempts, IFNULL(error, ''), IFNULL(give_up_reason, '') "
			. "FROM work_queue WHERE id = $id");
	return { status => $r->[0], attempts => $r->[1], error => $r->[2], give_up => $r->[3] };
}

with_work_conf(work_test_deadline_s => 2, work_test_slots => 2);
my $supervisor = work_pid();

# --- a hang: killed at its deadline, tried again, then failed ---------------
my $hang = enqueue('test_hang', "hang-$$", attempts => 2);
ok(wait_until(15, sub { item($hang)->{error} =~ /deadline/ }), 'the hung child was stopped');
my $it = item($hang);
like($it->{error}, qr/^test_hang was stopped: it ran past its deadline of 2 s \(attempt 1 of 2\)$/,
     'the reason names the deadline and the attempt');
ok(wait_until(30, sub { item($hang)->{status} eq 'failed' }), 'after its last attempt: failed');
$it = item($hang);
like($it->{error}, qr/ran past its deadline of 2 s \(attempt 2 of 2\)/, 'with the last reason');
is($it->{attempts}, 2, 'after two attempts');
is(work_pid(), $supervisor, 'sluice work itself is the same process');
ok(proc_alive($supervisor), 'and alive');

# --- a crash: only its own item fails ----------------------------------------
my $crash = enqueue('test_crash', "crash-$$");
my $after = enqueue('test_sleep', "after-crash-$$", payload => '{"ms":10}');
ok(wait_until(20, sub { item($crash)->{status} eq 'failed' }), 'the crashing item failed');
like(item($crash)->{error},
     qr/^the process running test_crash crashed \(killed by signal 11 \(Segmentation fault\); attempt 1 of 1\)$/,
     'saying how its process ended');
ok(wait_until(20, sub { item($after)->{status} eq 'done' }), 'the next item ran all the same');
ok(proc_alive($supervisor), 'sluice work survived it');
like(join('', SluiceTest::_slurp(env('SLUICE_WORK_LOG'))), qr/outcome=crashed/,
     'the crash is in the work log');

# --- a real area: an ingestion past its deadline ------------------------------
# Each document takes 1.5 s, the deadline is 1 s: every attempt is killed,
# and the last one's reason ends on the dataset and its documents.
with_work_conf(work_rag_ingest_deadline_s => 1, rag_test_ingest_delay_ms => 1500);
my $ds = new_dataset('past its deadline');
is(add_documents($ds, [ { text => 'one slow document', metadata => {} } ])->{status}, 202,
   'documents posted');
my $got = wait_dataset($ds, 60);
is($got->{status}, 'failed', 'the dataset failed');
like($got->{error}, qr/^rag_ingest was stopped: it ran past its deadline of 1 s \(attempt 3 of 3\)$/,
     'with the reason: the deadline') or diag explain $got;
is(mysql("SELECT GROUP_CONCAT(DISTINCT status) FROM rag_documents WHERE dataset_id = '$ds'"),
   'failed', 'its documents failed too');
is(mysql("SELECT status FROM work_queue WHERE kind = 'rag_ingest' AND ref_id = '$ds'"),
   'failed', 'the queue item ended failed, not stuck');

done_testing;
