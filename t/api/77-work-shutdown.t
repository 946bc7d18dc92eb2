#!/usr/bin/perl
# SIGTERM to sluice work: it claims nothing more, asks its children to
# stop, gives them work_shutdown_grace_s, then kills what is left, and
# exits within that bound.  Nothing is lost: every item it held is back in
# the queue, its attempt not counted, and runs when sluice work is back.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(time);

use RunnerFixture qw(with_work_conf work_pid restart_work);
use SluiceTest;

my $GRACE = 2;

sub enqueue {
	my ($kind, $ref, $payload) = @_;
	mysql("INSERT INTO work_queue (kind, ref_id, tenant, payload) VALUES "
	      . "('$kind', '$ref', 'shutdown-$$', " . (defined $payload ? "'$payload'" : 'NULL') . ')');
	return mysql("SELECT MAX(id) FROM work_queue WHERE ref_id = '$ref'");
}

sub row {
	my ($id) = @_;
	my ($r) = mysql("SELECT status, attempts, IFNULL(claimed_by, '') FROM work_queue WHERE id = $id");
	return { status => $r->[0], attempts => $r->[1], claimed_by => $r->[2] };
}

# A child that stops when asked (a long sleep that checks), and one that
# does not (a hang): the bound must hold for both.
with_work_conf(work_shutdown_grace_s => $GRACE, work_test_slots => 2, work_test_deadline_s => 600);
my $polite = enqueue('test_sleep', "polite-$$", '{"ms":120000}');
my $deaf = enqueue('test_hang', "deaf-$$");
ok(wait_until(20, sub { row($polite)->{status} eq 'running' && row($deaf)->{status} eq 'running' }),
   'both items are running');

my $pid = work_pid();
my $t0 = time;
ok(kill('TERM', $pid), "SIGTERM to sluice work $pid");
ok(wait_until($GRACE + 10, sub { !proc_alive($pid) }), 'sluice work exited');
my $took = time - $t0;
cmp_ok($took, '<', $GRACE + 3, "within the grace of $GRACE s and a little");
diag sprintf('exited %.1f s after SIGTERM (grace %d s)', $took, $GRACE);

for ([ $polite, 'the item that stopped when asked' ], [ $deaf, 'the item killed at the bound' ]) {
	my ($id, $what) = @$_;
	my $r = row($id);
	is($r->{status}, 'queued', "$what is back in the queue");
	is($r->{attempts}, 0, "$what: the interrupted attempt does not count");
	is($r->{claimed_by}, '', "$what: claimed by nobody");
}
my $log = SluiceTest::_slurp(env('SLUICE_WORK_LOG'));
like($log, qr/msg="work stopping"/, 'the stop is logged');
like($log, qr/msg="shutdown grace over: killing work children" children=1/,
     'one child outlived the grace and was killed');

# Back up: what was released runs again.  The hang is not wanted any more.
mysql("UPDATE work_queue SET status = 'done' WHERE id = $deaf");
mysql("UPDATE work_queue SET payload = '{\"ms\":10}' WHERE id = $polite");
restart_work();
ok(wait_until(20, sub { row($polite)->{status} eq 'done' }), 'the released item ran after the restart');
is(row($polite)->{attempts}, 1, 'as its first counted attempt');

done_testing;
