#!/usr/bin/perl
# The scheduler's tick never waits on a child: a cron pipeline fires within
# 2 s of its due time while a long ingestion runs in sluice work.  The
# schedule is made due a few seconds from now (instead of at the next
# minute) by setting next_run_at: set-up, not what is under test.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;

use RagFixture;
use RunnerFixture qw(with_work_conf make_pipeline runs_of run_row sq);
use SluiceTest;

# 60 documents at 250 ms each: a 15 s ingestion.
with_work_conf(rag_test_ingest_delay_ms => 250);
my $ds = new_dataset('long ingestion');
is(add_documents($ds, [ map { { text => "slow document $_", metadata => {} } } 1 .. 60 ])
   ->{status}, 202, 'a long ingestion is queued');
ok(wait_until(20, sub { mysql("SELECT status FROM work_queue WHERE kind = 'rag_ingest' "
	. "AND ref_id = '$ds'") eq 'running' }), 'and running');

my $p = make_pipeline(cron => '* * * * *', name => 'on time');
my $pid = $p->{pipeline_id};
mysql("UPDATE pipelines SET next_run_at = UTC_TIMESTAMP(3) + INTERVAL 3 SECOND WHERE id = " . sq($pid));
my $due = mysql("SELECT next_run_at FROM pipelines WHERE id = " . sq($pid));
my ($run);
ok(wait_until(15, sub { ($run) = runs_of($pid); defined $run }), 'the schedule fired');
my $late_ms = mysql("SELECT TIMESTAMPDIFF(MICROSECOND, '$due', created_at) / 1000 "
		    . "FROM pipeline_runs WHERE id = " . sq($run));
cmp_ok($late_ms, '<', 2000, 'within 2 s of its due time');
cmp_ok($late_ms, '>=', 0, 'and not before it');
diag sprintf('fired %.0f ms after its due time', $late_ms);
is(run_row($run)->{trigger_type}, 'schedule', 'as a scheduled run');
is(mysql("SELECT status FROM work_queue WHERE kind = 'rag_ingest' AND ref_id = '$ds'"),
   'running', 'while the ingestion was still running');
# Measured from the firing, not from now: a firing late in a minute has its
# next one (the minute after) come due before this line runs.
my $next = mysql("SELECT next_run_at > '$due' FROM pipelines WHERE id = " . sq($pid));
is($next, 1, 'and the next firing is after the one that fired');
# No more firings during the tests that follow.
mysql("UPDATE pipelines SET paused = 1, next_run_at = NULL WHERE id = " . sq($pid));

done_testing;
