#!/usr/bin/perl
# Who ranks a question: the worker that took its POST while at most one of
# that worker's last three rankings of the dataset cost more than
# question_inline_budget_ms of CPU time, sluice work otherwise, but for
# every 8th question since the worker last ranked one.  The budget counts
# CPU time, not the wall clock: on a busy machine a cheap ranking waits
# for a core, and measured by the clock that sent the worker's next
# questions to sluice work, whose child forks and checks the whole index
# file first (a costlier path, taken because the machine was busy).
#
# - rag_test_rank_delay_ms sleeps inside the ranking, as a worker waits
#   for a core: 120 ms asleep against a budget of 50, every question is
#   still ranked by the worker that took it (its queue row never claimed).
# - One worker, whose first ranking burns 200 ms of CPU
#   (rag_test_rank_spin_first_ms) against a budget of 50: one dear
#   ranking (a filter reading every row's metadata is one) does not send
#   the cheap questions after it to sluice work.  It did when the rule was
#   the last ranking alone: every later question went there, for the
#   worker's life.
# - One worker and a budget of 0, so that every ranking is dear: the
#   worker ranks the first two questions, then sluice work the others but
#   every 8th, which the worker ranks to see whether its rankings are
#   still dear: of 20, the worker ranks the 1st, 2nd, 10th and 18th.
# Every answer is the same in all: the right document first.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use RagFixture;

my $orig = conf_read();
my $workers = scalar(my @w = worker_pids(master_pid()));

END {
	local ($?, $@);
	eval { reload_stack($orig, $workers) if conf_read() ne $orig; 1 }
		or print STDERR "# restoring the config failed: $@";
}

my @topics = (
	[ 'salmon',  'Salmon swim upstream to spawn in the rivers where they hatched.' ],
	[ 'granite', 'Granite is an igneous rock of quartz and feldspar, cooled slowly.' ],
	[ 'violin',  'A violin has four strings and is played with a bow.' ],
	[ 'glacier', 'Glaciers are rivers of ice that carve valleys in mountains.' ],
);
my $id = ready_dataset([ map { { text => $_->[1], metadata => { topic => $_->[0] } } } @topics ],
	name => 'budget');
my $n = 4 * $workers + 4;

# Ask $count questions one after another; which of them sluice work
# ranked (its queue row claimed: attempts > 0), and how many answers put
# the asked topic first.
sub ask_all {
	my ($count) = @_;
	my (@claimed, $right);
	$right = 0;
	for my $i (1 .. $count) {
		my $t = $topics[$i % @topics];
		my $got = answer($id, { question => "what about the $t->[0]?" });
		$right++ if ($got->{status} // '') eq 'success'
			&& (($got->{relevant_documents} // [])->[0]{metadata}{topic} // '') eq $t->[0];
		# A question its worker ranks has no queue row at all.
		push @claimed, $i if (mysql("SELECT attempts FROM work_queue WHERE kind = 'rag_question' "
					    . "AND ref_id = '$got->{question_id}'") || 0) > 0;
	}
	return (\@claimed, $right);
}

reload_stack(conf_with($orig, rag_test_rank_delay_ms => 120));
my ($claimed, $right) = ask_all($n);
is_deeply($claimed, [], "120 ms asleep in each ranking, budget 50 ms of CPU: all $n "
	  . 'questions ranked by the worker that took them');
is($right, $n, 'each answered with its topic first');

reload_stack(conf_with($orig, workers => 1, rag_test_rank_spin_first_ms => 200), 1);
is(scalar(my @one = worker_pids(master_pid())), 1, 'one worker');
($claimed, $right) = ask_all(12);
is_deeply($claimed, [], 'the first ranking burnt 200 ms of CPU, the others cheap: '
	  . 'all 12 questions ranked by the worker');
is($right, 12, 'each answered with its topic first');

reload_stack(conf_with($orig, workers => 1, question_inline_budget_ms => 0), 1);
($claimed, $right) = ask_all(20);
is_deeply($claimed, [ 3 .. 9, 11 .. 17, 19, 20 ], 'budget 0: the worker ranked the 1st, '
	  . '2nd, 10th and 18th of 20 questions, sluice work the others');
is($right, 20, 'each answered with its topic first');

done_testing();
