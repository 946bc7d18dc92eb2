#!/usr/bin/perl
# Questions the serve workers rank at the same moment share a pass over
# their index file's codes (src/retrieval/pass_share.c): one worker runs
# the pass for every question posted for that file, the others wait.
#
# - Ranked one after another, each question that reads every vector
#   (hybrid off) is a pass of its own; its answer is the reference.
# - With the test hook rag_test_pass_pause_ms, a pass pauses while
#   questions come, then again with them taken.  Five questions of one
#   customer, for each metric, posted while a pass gathers: one pass
#   ranks them all, and each answer is the one it got alone.  Two
#   questions of another customer, posted at the same moment, are ranked
#   in a pass over their own dataset's file, at the same time: each
#   customer's answers come from its own dataset only.
# - The worker running a pass killed (-9) with three questions taken: its
#   own client gets a 502 and its question is not stored; the other two
#   are ranked by the next pass and answered as alone, each stored once.
# - question_shared_passes = off: a question is ranked in a pass of its
#   own, not on the board (no pause), with the same answer.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

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
	[ 'apple',   'Apples grow on trees in orchards and ripen in autumn.' ],
	[ 'violin',  'A violin has four strings and is played with a bow.' ],
	[ 'glacier', 'Glaciers are rivers of ice that carve valleys in mountains.' ],
	[ 'tide',    'Tides rise and fall twice a day, pulled by the moon.' ],
);
my $id = ready_dataset([ map { { text => $_->[1], metadata => { source => "$_->[0].txt" } } }
	@topics ], name => 'passes-a');
# Customer B: texts that share words with A's, so an answer from the
# wrong dataset would look plausible.
my $basic_b = second_user();
my $id_b = ready_dataset([
	{ text => 'Trout swim upstream in cold rivers.', metadata => { source => 'b-trout.txt' } },
	{ text => 'Marble is a rock made of recrystallised limestone.', metadata => { source => 'b-marble.txt' } },
	{ text => 'Pears grow on trees and ripen after picking.', metadata => { source => 'b-pear.txt' } },
], name => 'passes-b', basic => $basic_b);

my $off = JSON::PP::false();
my @asks = map { { question => 'Which fish swim upstream?', hybrid => $off, distance_metric => $_,
		   maximal_marginal_relevance => $off, top_n => 5, k => 8 } } qw(L2 L1 max cos dot);
my @asks_b = map { { question => $_, hybrid => $off, top_n => 3 } }
	'Which fish swim upstream?', 'What grows on trees?';

sub answer_text {
	my ($body) = @_;
	return join ' ', map { "$_->{metadata}{source}=$_->{score}" }
		@{ $body->{relevant_documents} // [] };
}

sub passes {
	my $res = http(GET => '/_test/passes');
	die 'GET /_test/passes: ' . describe($res) unless $res->{status} == 200;
	return $res->{json};
}

sub stored {
	my ($ds) = @_;
	return mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$ds'");
}

# --- alone: one after another -----------------------------------------------------------

my $p0 = passes();
my @alone = map { answer($id, $_) } @asks;
my @alone_b = map { answer($id_b, $_, basic => $basic_b) } @asks_b;
is(scalar(grep { ($_->{status} // '') eq 'success' } @alone, @alone_b), @asks + @asks_b,
   'every question answered alone') or diag explain [ @alone, @alone_b ];
like(answer_text($alone[0]), qr/^salmon\.txt=/, 'a sane answer (the salmon first)');
like(answer_text($alone_b[0]), qr/^b-trout\.txt=/, "customer B's from its own dataset");
my $p1 = passes();
is($p1->{questions} - $p0->{questions}, @asks + @asks_b, 'each ranked in a pass of the board');
is($p1->{passes} - $p0->{passes}, @asks + @asks_b, 'one after another: a pass each');

# --- a pass takes what comes while it gathers ----------------------------------------------

my $pause = 2000;
reload_stack(conf_with($orig, workers => 10, rag_test_pass_pause_ms => $pause), 10);

# POST a question from a child of its own; ->finish gives the response.
sub post_async {
	my ($ds, $body, $basic) = @_;
	return start_requests(clients => 1, requests => 1, method => 'POST',
			      path => "/dataset/$ds/question",
			      opts => { json => $body, basic => $basic // demo_basic() });
}

# Wait until $n workers are in a pass with $taken questions taken.
sub wait_passing {
	my ($n, $taken) = @_;
	my $p;
	wait_until(20, sub { $p = passes(); @{ $p->{passing} } == $n && $p->{taken} == $taken },
		   0.02) or diag explain $p;
	return $p;
}

# The GET answers of finished POSTs, as text.
sub answers_of {
	my ($ds, $basic, @posts) = @_;
	return map {
		my ($r) = $_->finish;
		$r->{status} == 200
			? answer_text(answer_of($ds, $r->{json}{question_id}, 20,
						basic => $basic // demo_basic())->{json})
			: "POST $r->{status}";
	} @posts;
}

$p0 = passes();
my @posts = (post_async($id, $asks[0]));
my $p = wait_passing(1, 1);
is(scalar @{ $p->{passing} }, 1, 'the first question: a worker gathering its pass');
push @posts, map { post_async($id, $_) } @asks[1 .. $#asks];
my @posts_b = map { post_async($id_b, $_, $basic_b) } @asks_b;
$p = wait_passing(2, @asks + @asks_b);
is($p->{taken}, @asks + @asks_b, "both customers' questions taken, by two passes at once");
is_deeply([ answers_of($id, undef, @posts) ], [ map { answer_text($_) } @alone ],
	  'five metrics in one pass: each answer the one it got alone');
is_deeply([ answers_of($id_b, $basic_b, @posts_b) ], [ map { answer_text($_) } @alone_b ],
	  "customer B's, in its own pass: its own dataset's answers");
$p1 = passes();
is($p1->{passes} - $p0->{passes}, 2, 'two passes');
is($p1->{questions} - $p0->{questions}, @asks + @asks_b, 'for all seven questions');

# --- the passing worker killed -------------------------------------------------------------

my $before = stored($id);
$p0 = passes();
@posts = (post_async($id, $asks[0]));
$p = wait_passing(1, 1);
my $leader = $p->{passing}[0];
push @posts, map { post_async($id, $_) } @asks[1, 2];
$p = wait_passing(1, 3);
is_deeply($p->{passing}, [ $leader ], 'one pass took all three');
ok(kill('KILL', $leader), "the passing worker $leader killed");
my @got = answers_of($id, undef, @posts);
is($got[0], 'POST 502', "its own client's POST: 502");
is_deeply([ @got[1, 2] ], [ map { answer_text($_) } @alone[1, 2] ],
	  'the two it had taken: answered as alone');
$p1 = passes();
is($p1->{passes} - $p0->{passes}, 1, 'by one pass (the killed one never ended)');
is($p1->{questions} - $p0->{questions}, 2, 'of the two');
is(stored($id) - $before, 2, "two questions stored, the killed worker's not");
ok(wait_workers(master_pid(), 10, 30), 'the master replaced the worker');

# --- off --------------------------------------------------------------------------------------

reload_stack(conf_with($orig, workers => 10, rag_test_pass_pause_ms => $pause,
		       question_shared_passes => 'off'), 10);
$p0 = passes();
my $t0 = Time::HiRes::time();
is(answer_text(answer($id, $asks[3])), answer_text($alone[3]), 'off: the answer it got alone');
cmp_ok(Time::HiRes::time() - $t0, '<', $pause / 1000, 'off: without the pass pause');
$p1 = passes();
is($p1->{questions} - $p0->{questions}, 0, 'off: not ranked on the board');

done_testing();
