#!/usr/bin/perl
# Fair claiming: a customer with a thousand items queued delays another
# customer's single item by at most one item's time per slot.  The items
# are of the test build's test_sleep kind (200 ms each), so what is
# measured is the claim order, not any area's work.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(time);

use RunnerFixture qw(with_work_conf);
use SluiceTest;

my $ITEM_MS = 200;

sub enqueue_many {
	my ($tenant, $n, $tag) = @_;
	mysql("INSERT INTO work_queue (kind, ref_id, tenant, payload) "
	      . "SELECT 'test_sleep', CONCAT('$tag-', seq), '$tenant', '{\"ms\":$ITEM_MS}' "
	      . "FROM seq_1_to_$n");
}

sub running_of {
	my ($tenant) = @_;
	return mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'test_sleep' "
		     . "AND tenant = '$tenant' AND status = 'running'");
}

sub drop_tenant {
	my ($tenant) = @_;
	mysql("UPDATE work_queue SET status = 'done' WHERE kind = 'test_sleep' "
	      . "AND tenant = '$tenant' AND status = 'queued'");
}

# One round with $slots slots: a thousand of A's items, then B's one.
sub round {
	my ($slots) = @_;
	my ($a, $b) = ("fair-a-$$-$slots", "fair-b-$$-$slots");

	with_work_conf(work_test_slots => $slots);
	enqueue_many($a, 1000, "a$slots");
	ok(wait_until(20, sub { running_of($a) == $slots }),
	   "$slots slot(s): A's items fill them");
	mysql("INSERT INTO work_queue (kind, ref_id, tenant, payload) VALUES "
	      . "('test_sleep', 'b-one', '$b', '{\"ms\":$ITEM_MS}')");
	my ($bid) = map { $_->[0] } mysql("SELECT MAX(id) FROM work_queue WHERE tenant = '$b'");
	ok(wait_until(20, sub { mysql("SELECT status FROM work_queue WHERE id = $bid") eq 'done' }),
	   "$slots slot(s): B's single item ran");
	my ($queued_at, $claimed_at, $wait_ms) = @{ (mysql(
		"SELECT created_at, claimed_at, TIMESTAMPDIFF(MICROSECOND, created_at, "
		. "claimed_at) / 1000 FROM work_queue WHERE id = $bid"))[0] };
	my $overtaken = mysql("SELECT COUNT(*) FROM work_queue WHERE tenant = '$a' AND "
		. "claimed_at > '$queued_at' AND claimed_at < '$claimed_at'");
	# A claim already under way when B's row arrived (its read came
	# first) may still go to A; no later one may.  FIFO would give ~1000.
	cmp_ok($overtaken, '<=', 1, "$slots slot(s): at most the claim under way went to A "
	       . "between B's queueing and its claim");
	cmp_ok($wait_ms, '<', $ITEM_MS + 800,
	       "$slots slot(s): B waited at most one item ($ITEM_MS ms) and a claim");
	diag sprintf('%d slot(s): B claimed %.0f ms after it was queued', $slots, $wait_ms);
	my $left = mysql("SELECT COUNT(*) FROM work_queue WHERE tenant = '$a' AND status = 'queued'");
	cmp_ok($left, '>', 900, "$slots slot(s): most of A's thousand were still queued");
	drop_tenant($a);
	ok(wait_until(10, sub { running_of($a) == 0 }), "$slots slot(s): A's last items end");
}

round(1);
round(2);

# Equal tenants take turns: two tenants of five items each, one slot, are
# claimed alternately.
with_work_conf(work_test_slots => 1);
my ($x, $y) = ("turns-x-$$", "turns-y-$$");
mysql("INSERT INTO work_queue (kind, ref_id, tenant, payload, available_at) "
      . "SELECT 'test_sleep', CONCAT('t-', seq), IF(seq <= 5, '$x', '$y'), '{\"ms\":50}', "
      . "UTC_TIMESTAMP(3) + INTERVAL 1 SECOND FROM seq_1_to_10");
ok(wait_until(30, sub { mysql("SELECT COUNT(*) FROM work_queue WHERE tenant IN ('$x', '$y') "
	. "AND status = 'done'") == 10 }), 'ten items of two tenants ran');
my @order = map { $_->[0] } mysql("SELECT tenant FROM work_queue WHERE tenant IN ('$x', '$y') "
	. "ORDER BY claimed_at, id");
my $switches = grep { $order[$_] ne $order[$_ - 1] } 1 .. $#order;
is($switches, 9, 'claimed in turns, one of each tenant after the other')
	or diag "@order";

done_testing;
