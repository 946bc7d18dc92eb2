#!/usr/bin/perl
# Who ranks a question: the worker that took its POST while that worker's
# last ranking of the dataset cost at most question_inline_budget_ms of
# CPU time, sluice work otherwise.  The budget counts CPU time, not the
# wall clock: on a busy machine a cheap ranking waits for a core, and
# measured by the clock that sent the worker's next questions to sluice
# work, whose child forks and checks the whole index file first (a costlier
# path, taken because the machine was busy).
#
# - rag_test_rank_delay_ms sleeps inside the ranking, as a worker waits
#   for a core: 120 ms asleep against a budget of 50, every question is
#   still ranked by the worker that took it (its queue row never claimed).
# - A budget of 0 still moves work: after each worker's first ranking,
#   sluice work ranks every question (its queue row claimed).
# Every answer is the same in both: the right document first.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use RagFixture;

my $orig = conf_read();

END {
	local ($?, $@);
	eval { reload_stack($orig) if conf_read() ne $orig; 1 }
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
my $workers = scalar(my @w = worker_pids(master_pid()));
my $n = 4 * $workers + 4;

# Ask $n questions one after another; how many of their queue rows sluice
# work claimed (attempts > 0), and how many answers put the asked topic first.
sub ask_all {
	my ($claimed, $right) = (0, 0);
	for my $i (1 .. $n) {
		my $t = $topics[$i % @topics];
		my $got = answer($id, { question => "what about the $t->[0]?" });
		$right++ if ($got->{status} // '') eq 'success'
			&& (($got->{relevant_documents} // [])->[0]{metadata}{topic} // '') eq $t->[0];
		# A question its worker ranks has no queue row at all.
		$claimed++ if (mysql("SELECT attempts FROM work_queue WHERE kind = 'rag_question' "
				     . "AND ref_id = '$got->{question_id}'") || 0) > 0;
	}
	return ($claimed, $right);
}

reload_stack(conf_with($orig, rag_test_rank_delay_ms => 120));
my ($claimed, $right) = ask_all();
is($claimed, 0, "120 ms asleep in each ranking, budget 50 ms of CPU: all $n questions "
   . 'ranked by the worker that took them');
is($right, $n, 'each answered with its topic first');

reload_stack(conf_with($orig, question_inline_budget_ms => 0));
($claimed, $right) = ask_all();
cmp_ok($claimed, '>=', $n - $workers, "budget 0: sluice work ranked $claimed of $n "
       . "questions (all but each of the $workers workers' first)");
is($right, $n, 'each answered with its topic first');

done_testing();
