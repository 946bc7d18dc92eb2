#!/usr/bin/perl
# A worker that ranked a user's question keeps the dataset's row it read,
# and that user's next POST on the dataset is not preceded by a SELECT:
# the INSERT of the answer stores it only while the dataset is still the
# caller's and says success (src/retrieval/questions.c).  One worker, so
# every POST below meets the row its first question left.  Each way the
# row can go stale must still get the answer a fresh read gives:
# - another user's POST on the dataset: 404, and nothing stored;
# - the dataset re-ingesting (more documents, sluice work stopped): 422,
#   and nothing stored; once it is success again, the new document is
#   found, from the new index file;
# - MariaDB stopped: 503 and nothing stored; once it is back, the next POST
#   is answered and stored once;
# - the dataset deleted by its owner through this worker, then through the
#   database behind the worker's back (as another host's DELETE would):
#   404, and nothing stored.
# The general log proves the row is used at all: the second question of
# a warm worker runs no SELECT of the dataset.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use RagFixture;

my $orig = conf_read();
my $workers = scalar(my @w = worker_pids(master_pid()));
my $db_down = 0;

END {
	local ($?, $@);
	eval {
		if ($db_down) {
			dev('db-start');
			wait_until(60, sub { http(GET => '/health')->{status} == 200 });
		}
		dev('work-start');
		reload_stack($orig, $workers) if conf_read() ne $orig;
		1;
	} or print STDERR "# restoring the stack failed: $@";
}

reload_stack(conf_with($orig, workers => 1), 1);
is(scalar(my @one = worker_pids(master_pid())), 1, 'one worker');

my @topics = (
	[ 'salmon',  'Salmon swim upstream to spawn in the rivers where they hatched.' ],
	[ 'granite', 'Granite is an igneous rock of quartz and feldspar, cooled slowly.' ],
	[ 'violin',  'A violin has four strings and is played with a bow.' ],
);
my $id = ready_dataset([ map { { text => $_->[1], metadata => { topic => $_->[0] } } } @topics ],
	name => 'recall');
my $other = second_user();
my $gone = 'Dataset not found';
my $held = 'Dataset is still processing: questions can be asked once its status is success';

sub stored { mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$id'") }
sub first_topic { ($_[0]{relevant_documents} // [])->[0]{metadata}{topic} // '' }

# The reads of a dataset for a POST (rag_dataset_of_caller) since the
# general log was emptied; no other statement starts so.
sub dataset_selects {
	mysql("SELECT COUNT(*) FROM mysql.general_log WHERE command_type = 'Execute' "
	      . "AND argument LIKE 'SELECT status, embedder, dimensions%'");
}
my %log = map { $_ => mysql("SELECT \@\@GLOBAL.$_") } qw(general_log log_output);
END {
	local ($?, $@);
	eval { mysql("SET GLOBAL general_log = $log{general_log}");
	       mysql("SET GLOBAL log_output = '$log{log_output}'") } if defined $log{log_output};
}
mysql("SET GLOBAL log_output = 'TABLE'");
mysql('TRUNCATE mysql.general_log');
mysql('SET GLOBAL general_log = 1');

my $a = answer($id, { question => 'which fish swims upstream?' });
is($a->{status}, 'success', 'first question answered');
is(first_topic($a), 'salmon', 'salmon first');

is(dataset_selects(), 1, 'its POST read the dataset');
my $res = ask($id, { question => 'which rock has quartz?' });
is($res->{status}, 200, 'second question: 200');
is(dataset_selects(), 1, 'its POST did not: the worker kept the row');
mysql('SET GLOBAL general_log = 0');
is(first_topic(answer($id, { question => 'an instrument with a bow' })), 'violin',
   'a warm worker still answers right');

# --- another user, on the same worker --------------------------------------------------

my $n = stored();
for my $i (1 .. 3) {
	json_response_is(ask($id, { question => 'salmon?' }, basic => $other), 404,
			 { detail => $gone }, "another user's POST $i: 404");
}
is(stored(), $n, "another user's POSTs stored nothing");
is(mysql("SELECT COUNT(*) FROM rag_questions q JOIN api_users u ON u.id = q.asked_by_user_id "
	 . "WHERE q.dataset_id = '$id' AND u.name = '" . (split /:/, $other)[0] . "'"), 0,
   'no question of the other user on the dataset');

# --- re-ingesting -------------------------------------------------------------------

my $r = dev('work-stop');
is($r->{exit}, 0, 'sluice work stopped') or diag $r->{err};
is(add_documents($id, [ { text => 'Glaciers are rivers of ice that carve valleys in mountains.',
			  metadata => { topic => 'glacier' } } ])->{status}, 202,
   'a fourth document: 202');
is(rag(GET => "/dataset/$id")->{json}{status}, 'processing', 'the dataset is processing');
$n = stored();
for my $i (1 .. 3) {
	json_response_is(ask($id, { question => 'which fish swims upstream?' }), 422,
			 { detail => $held }, "POST $i while processing: 422");
}
is(stored(), $n, 'nothing stored while processing');
$r = dev('work-start');
is($r->{exit}, 0, 'sluice work started') or diag $r->{err};
is(wait_dataset($id, 60)->{status}, 'success', 'ingested again');
$a = answer($id, { question => 'rivers of ice carving valleys' });
is($a->{status}, 'success', 'a question after the re-ingestion answered');
is(first_topic($a), 'glacier', 'the new document first: the new index file was ranked');
$a = answer($id, { question => 'which fish swims upstream?' });
is(first_topic($a), 'salmon', 'and the old ones still found');

# --- MariaDB restarted under the kept row ---------------------------------------------

$n = stored();
$db_down = 1;
$r = dev('db-stop');
is($r->{exit}, 0, 'MariaDB stopped') or diag "$r->{out}$r->{err}";
json_response_is(ask($id, { question => 'which fish swims upstream?' }), 503,
		 { detail => 'Database unavailable' }, 'a POST on the kept row while MariaDB is down');
$r = dev('db-start');
is($r->{exit}, 0, 'MariaDB started again') or diag "$r->{out}$r->{err}";
$db_down = 0 if $r->{exit} == 0;
ok(wait_until(60, sub { http(GET => '/health')->{status} == 200 }), '... and healthy');
is(stored(), $n, 'nothing stored while it was down');
$a = answer($id, { question => 'which fish swims upstream?' });
is($a->{status}, 'success', 'the next POST answered, on a new connection');
is(first_topic($a), 'salmon', '... rightly');
is(stored(), $n + 1, '... and stored once');

# --- deleted ------------------------------------------------------------------------

# Behind the worker's back, as a DELETE on another host would be: the
# worker's row says the dataset is there.
my $id2 = ready_dataset([ map { { text => $_->[1], metadata => { topic => $_->[0] } } } @topics ],
	name => 'recall-2');
is(answer($id2, { question => 'granite' })->{status}, 'success', 'second dataset: answered');
is(answer($id2, { question => 'granite' })->{status}, 'success', 'and again, from the kept row');
mysql("DELETE FROM rag_datasets WHERE id = '$id2'");
json_response_is(ask($id2, { question => 'granite' }), 404, { detail => $gone },
		 'deleted behind the worker: 404');
is(mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$id2'"), 0,
   'nothing stored for it');

is(rag(DELETE => "/dataset/$id")->{status}, 204, 'the first dataset deleted by its owner');
json_response_is(ask($id, { question => 'salmon' }), 404, { detail => $gone },
		 'a POST after the DELETE: 404');
is(stored(), 0, 'no question left for it');

done_testing();
