#!/usr/bin/perl
# Questions sluice work answers together: a question it claims takes along
# the other queued questions of its dataset and tenant (src/retrieval/
# answer.c), and those that read every vector read them once together.
#
# - Each question answered in a batch gets exactly the answer it gets
#   ranked alone: the same snippets in the same order with the same
#   scores, for every metric with hybrid off (the shared scan), hybrid on,
#   a metadata filter, MMR on and off; 20 questions, so a batch's results
#   take two statements.
# - Batches happen: fewer claims than questions, the riders' queue rows
#   done by the process that answered them.
# - Another customer's questions, queued at the same moment, never ride
#   along: each customer gets answers from its own dataset only.
# - A question asked while the child that answered the last one lingers
#   rides along with that child's claim: its POST's wake nudged it.
# - The child's rounds go on past their first second while no other
#   dataset's question waits, and end at the next second once another
#   customer's question waits for the slot.
# - sluice work killed (-9) while it holds a batch: every question is
#   answered all the same, once, by the next sluice work.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);

use SluiceTest;
use RagFixture;

my $orig = conf_read();

END {
	local ($?, $@);
	eval {
		reload_stack($orig) if conf_read() ne $orig;
		dev('work-start');
		1;
	} or print STDERR "# restoring the stack failed: $@";
}

my @topics = (
	[ 'salmon',  'Salmon swim upstream to spawn in the rivers where they hatched.' ],
	[ 'granite', 'Granite is an igneous rock of quartz and feldspar, cooled slowly.' ],
	[ 'apple',   'Apples grow on trees in orchards and ripen in autumn.' ],
	[ 'violin',  'A violin has four strings and is played with a bow.' ],
	[ 'glacier', 'Glaciers are rivers of ice that carve valleys in mountains.' ],
	[ 'bread',   'Bread is baked from wheat flour, water, salt and yeast.' ],
	[ 'comet',   'A comet is a ball of ice and dust with a tail that points away from the sun.' ],
	[ 'honey',   'Bees make honey from the nectar of flowers and store it in combs.' ],
	[ 'tide',    'Tides rise and fall twice a day, pulled by the moon.' ],
	[ 'copper',  'Copper conducts electricity well and turns green in the air.' ],
);
my $id = ready_dataset([ map { { text => $_->[1], metadata => { source => "$_->[0].txt",
	kind => ($_->[0] =~ /^[a-g]/ ? 'early' : 'late') } } } @topics ], name => 'batch-a');

# Customer B: a dataset whose texts share words with A's, so an answer
# from the wrong dataset would look plausible.
my $basic_b = second_user();
my $id_b = ready_dataset([
	{ text => 'Trout swim upstream in cold rivers.', metadata => { source => 'b-trout.txt' } },
	{ text => 'Marble is a rock made of recrystallised limestone.', metadata => { source => 'b-marble.txt' } },
	{ text => 'Pears grow on trees and ripen after picking.', metadata => { source => 'b-pear.txt' } },
], name => 'batch-b', basic => $basic_b);

# The questions of A: every metric with hybrid off (read every vector),
# and the ranking's other paths.
my @asks;
for my $m (qw(L2 L1 max cos dot)) {
	push @asks, { question => 'Which fish swim upstream?', hybrid => JSON::PP::false(),
		      distance_metric => $m, maximal_marginal_relevance => JSON::PP::false(),
		      top_n => 5, k => 8 };
	push @asks, { question => 'What rock cools slowly?', hybrid => JSON::PP::false(),
		      distance_metric => $m, top_n => 3 };
}
push @asks, { question => 'What do bees make?' },
	{ question => 'What carves valleys?', distance_metric => 'L2', top_n => 4 },
	{ question => 'ice', hybrid => JSON::PP::false(), metadata_filter => { kind => 'late' },
	  top_n => 4, maximal_marginal_relevance => JSON::PP::false() },
	{ question => 'What turns green?', hybrid => JSON::PP::false(), k => 1, top_n => 1 };
# More than DB_IN_BATCH (16) in one batch: its results take two statements.
push @asks, map { { question => $_, hybrid => JSON::PP::false(), top_n => 2,
		    maximal_marginal_relevance => JSON::PP::false() } }
	'What is played with a bow?', 'What is baked from flour?', 'What pulls the tides?',
	'What has a tail of dust?', 'What grows in orchards?', 'What conducts electricity?';
my @asks_b = map { { question => $_, hybrid => JSON::PP::false(), top_n => 3 } }
	'Which fish swim upstream?', 'What rock is this?', 'What grows on trees?';

# An answer as text: each snippet's source and score, in order.
sub answer_text {
	my ($body) = @_;
	return join ' ', map { "$_->{metadata}{source}=$_->{score}" }
		@{ $body->{relevant_documents} // [] };
}

# --- ranked alone: by the worker that took the POST ------------------------------------

my @alone = map { answer($id, $_) } @asks;
is(scalar(grep { ($_->{status} // '') eq 'success' } @alone), scalar @asks,
   'every question answered alone') or diag explain \@alone;
like(answer_text($alone[0]), qr/^salmon\.txt=/, 'a sane answer alone (the salmon first)');

# POST every question with sluice work stopped, so they queue; then start
# it and wait for all.  Returns the GET bodies in order.
sub ask_queued {
	my (@list) = @_;                 # [ dataset, body, basic ]
	my $r = dev('work-stop');
	die "work-stop: $r->{err}" if $r->{exit};
	my @qids;
	for my $x (@list) {
		my $res = ask($x->[0], $x->[1], basic => $x->[2]);
		die 'POST question: ' . describe($res) unless $res->{status} == 200;
		push @qids, $res->{json}{question_id};
	}
	$r = dev('work-start');
	die "work-start: $r->{err}" if $r->{exit};
	return map {
		my $g = answer_of($list[$_][0], $qids[$_], 30, basic => $list[$_][2]);
		+{ %{ $g->{json} // {} }, question_id => $qids[$_] }
	} 0 .. $#list;
}

# --- ranked together by sluice work ------------------------------------------------------

# One child: A's 20 questions make one batch (two statements of results).
reload_stack(conf_with($orig, question_inline_max_snippets => 0, work_rag_question_slots => 1));
my $a_basic = demo_basic();
my @list = ((map { [ $id, $_, $a_basic ] } @asks), (map { [ $id_b, $_, $basic_b ] } @asks_b));
my @got = ask_queued(@list);
for my $i (0 .. $#asks) {
	my $what = join ',', map { "$_=" . (ref $asks[$i]{$_} ? JSON::PP::encode_json($asks[$i]{$_})
		: $asks[$i]{$_}) } sort keys %{ $asks[$i] };
	is($got[$i]{status}, 'success', "together: answered ($what)");
	is(answer_text($got[$i]), answer_text($alone[$i]), "together: the answer it gets alone ($what)");
}
for my $j (0 .. $#asks_b) {
	my $g = $got[@asks + $j];
	is($g->{status}, 'success', "customer B's question $j answered");
	my @src = map { $_->{metadata}{source} } @{ $g->{relevant_documents} // [] };
	ok(@src && !grep({ !/^b-/ } @src), "customer B's question $j answered from B's dataset only")
		or diag "@src";
}
is($got[@asks]{relevant_documents}[0]{metadata}{source}, 'b-trout.txt', "B's fish question finds B's trout");

my $qlist = join ',', map { "'$_->{question_id}'" } @got[0 .. $#asks];
# The claimed item ends a moment after its child's last answer.
my ($claims, $riders, $done);
wait_until(10, sub {
	($claims, $riders, $done) = split /\t/, mysql("SELECT SUM(attempts > 0), "
		. "SUM(attempts = 0 AND claimed_by IS NOT NULL), SUM(status = 'done') FROM work_queue "
		. "WHERE kind = 'rag_question' AND ref_id IN ($qlist)");
	$done == @asks;
});
is($done, scalar @asks, "every one of A's questions' queue rows is done");
cmp_ok($riders, '>=', 1, "some rode along with another's claim ($riders of " . @asks . ')');
is($claims, 1, 'one claim took all of them along');
is($claims + $riders, scalar @asks, 'each row either claimed or done along with a claim');

# --- a lingering child nudged --------------------------------------------------------------

# One child, whose own look for more questions (rag_test_nudge_poll_ms) is
# further off than its rounds may last (a second): a question asked while
# it lingers after the first one's answer rides along with the first's
# claim only because its POST's wake nudged the child.  Unnudged, the
# child would end at its look, and the question would get a claim of its
# own.
reload_stack(conf_with($orig, question_inline_max_snippets => 0, work_rag_question_slots => 1,
	rag_test_nudge_poll_ms => 8000));
my $first_id = ask($id, $asks[0])->{json}{question_id} // '';
is(answer_of($id, $first_id, 30)->{json}{status}, 'success', 'nudge: the first question answered');
my $second_ask = ask($id, $asks[1]);
is($second_ask->{status}, 200, 'nudge: the second question asked while the child lingers');
my $second_id = $second_ask->{json}{question_id} // '';
my $second = answer_of($id, $second_id, 30);
is($second->{json}{status}, 'success', 'nudge: the second question answered');
is(answer_text($second->{json}), answer_text($alone[1]), 'nudge: with the answer it gets alone');
my $pair = join ',', map { "'$_'" } $first_id, $second_id;
my ($pair_claims, $pair_riders) = split /\t/, mysql("SELECT SUM(attempts > 0), "
	. "SUM(attempts = 0 AND claimed_by IS NOT NULL) FROM work_queue "
	. "WHERE kind = 'rag_question' AND ref_id IN ($pair)");
is($pair_claims, 1, 'nudge: one claim answered both');
is($pair_riders, 1, 'nudge: the second rode along with it');

# --- rounds past a second, ended for another customer -------------------------------------

# One child, lingering 20 s for more questions (rag_test_linger_ms), so
# that only its rounds' bounds end it:
# - a question asked 1.5 s after the first one's answer rides along with
#   the first's claim: with no other dataset's question waiting, the
#   rounds go on past their first second (a new child would check the
#   whole index file again);
# - customer B's question, asked while that child lingers on A's dataset,
#   is answered within seconds: at the next second of its rounds the child
#   finds it waiting and ends, where it could go on for 10 s.
reload_stack(conf_with($orig, question_inline_max_snippets => 0, work_rag_question_slots => 1,
	rag_test_linger_ms => 20000));
my $early_id = ask($id, $asks[2])->{json}{question_id} // '';
is(answer_of($id, $early_id, 30)->{json}{status}, 'success', 'rounds: the first question answered');
sleep 1.5;
my $late_id = ask($id, $asks[3])->{json}{question_id} // '';
my $late = answer_of($id, $late_id, 30);
is($late->{json}{status}, 'success', 'rounds: a question 1.5 s later answered');
is(answer_text($late->{json}), answer_text($alone[3]), 'rounds: with the answer it gets alone');
$pair = join ',', map { "'$_'" } $early_id, $late_id;
($pair_claims, $pair_riders) = split /\t/, mysql("SELECT SUM(attempts > 0), "
	. "SUM(attempts = 0 AND claimed_by IS NOT NULL) FROM work_queue "
	. "WHERE kind = 'rag_question' AND ref_id IN ($pair)");
is($pair_claims, 1, 'rounds: one claim answered both, past its first second');
is($pair_riders, 1, 'rounds: the later one rode along with it');
my $t_b = time;
my $b_id = ask($id_b, $asks_b[0], basic => $basic_b)->{json}{question_id} // '';
my $b_got = answer_of($id_b, $b_id, 30, basic => $basic_b);
my $b_took = time - $t_b;
is($b_got->{json}{status}, 'success', "rounds: customer B's question answered");
is($b_got->{json}{relevant_documents}[0]{metadata}{source}, 'b-trout.txt',
   "rounds: from B's dataset");
cmp_ok($b_took, '<', 6, sprintf("rounds: B's question did not wait for A's child's 10 s "
	. "(%.1f s)", $b_took));
# B's own child lingers in rounds of its own, its claim running: only A's
# is done.
ok(wait_until(10, sub { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_question' "
	. "AND ref_id IN ($pair) AND status <> 'done'") == 0 }), "rounds: A's claim ended");

# --- the child holding a batch killed ------------------------------------------------------

reload_stack(conf_with($orig, question_inline_max_snippets => 0, rag_test_batch_delay_ms => 3000));
my $r = dev('work-stop');
die "work-stop: $r->{err}" if $r->{exit};
my @qids = map { ask($id, $asks[$_])->{json}{question_id} } 0 .. 5;
is(scalar(grep { defined } @qids), 6, 'six questions queued');
$qlist = join ',', map { "'$_'" } @qids;
$r = dev('work-start');
die "work-start: $r->{err}" if $r->{exit};
ok(wait_until(20, sub { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_question' "
	. "AND ref_id IN ($qlist) AND status = 'queued' AND available_at > UTC_TIMESTAMP(3)") >= 1 }),
   'a batch holds riders');
my $work = mysql("SELECT SUBSTRING_INDEX(claimed_by, ':', -1) FROM work_queue WHERE kind = "
	. "'rag_question' AND ref_id IN ($qlist) AND status = 'running' LIMIT 1");
my ($child) = $work =~ /^\d+$/ ? split(/\s+/, run_cmd([ 'pgrep', '-P', $work ])->{out}) : ();
ok($child && kill('KILL', $child), "kill -9 the child of sluice work ($work) holding the batch");
is(mysql("SELECT COUNT(*) FROM rag_questions WHERE id IN ($qlist) AND status = 'processing'"), 6,
   'nothing answered before the kill');
my @after = map { answer_of($id, $qids[$_], 30)->{json} } 0 .. 5;
for my $i (0 .. 5) {
	is(answer_text($after[$i]), answer_text($alone[$i]), "after the kill: question $i answered as alone");
}
ok(wait_until(10, sub { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_question' "
	. "AND ref_id IN ($qlist) AND status <> 'done'") == 0 }), 'every queue row of them done');

done_testing;
