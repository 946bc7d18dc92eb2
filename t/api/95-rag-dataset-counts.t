#!/usr/bin/perl
# Clients poll a dataset while it is ingested; counting a processing
# dataset costs an index entry per document and per snippet.  A GET that
# counts stores its counts (rag_dataset_counts) and GETs within
# dataset_counts_cache_ms show them, unless a POST, a delete or a retry
# bumped the dataset's index_generation since: a client sees its own change
# at once.  With sluice work stopped, a dataset of 2,000 documents stays
# processing: ten GETs in a row must read fewer index entries than one
# count does (MariaDB's Handler_read_next, counted, not timed), a change
# not made through the API shows once the counts are older than the
# setting, a POST shows at once, another customer reads nothing, older
# counts never replace newer ones, and the counts go with the dataset.
# Counts are shown alike for an id in upper case, after every worker was
# killed with -9 and after MariaDB restarted; another customer's look-alike
# id stores nothing.  With the setting at 0 every GET counts.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(sleep time);

use RagFixture;
use SluiceTest;

my $DOCS = 2000;
my $KEEP_MS = 5000;

my $orig = conf_read();
my $restored = 0;
my $db_down = 0;
END {
	local ($?, $@);
	if ($db_down) {
		eval { dev('db-start') };
		wait_until(60, sub { http(GET => '/health')->{status} == 200 });
	}
	return if $restored;
	eval { dev('work-start') };
	eval { reload_serve($orig) };
}
reload_serve(conf_with($orig, dataset_counts_cache_ms => $KEEP_MS));

my $mine = second_user();
my $other = second_user();
my $r = dev('work-stop');
is($r->{exit}, 0, 'sluice work stopped: nothing gets ingested') or diag $r->{err};

my $ds = new_dataset('counts kept a moment', basic => $mine);
for my $batch (0, 1) {
	my $res = add_documents($ds, [ map { { text => "Tide table $_ of the northern harbour." } }
				       $batch * 1000 + 1 .. ($batch + 1) * 1000 ], basic => $mine);
	is($res->{status}, 202, "batch $batch of 1,000 documents: 202");
}

my $read_next = sub {
	my ($v) = mysql("SHOW GLOBAL STATUS LIKE 'Handler_read_next'") =~ /(\d+)\s*\z/;
	return $v // -1;
};
my $progress = sub {
	my ($body) = @_;
	return [ $body->{status}, @{ $body->{progress} }{
		 qw(documents_total documents_processing documents_done documents_failed) } ];
};
my $stored = sub {
	return scalar mysql("SELECT CONCAT_WS(' ', c.processing, c.done, c.failed, c.snippets, "
			    . "c.index_generation = d.index_generation) FROM rag_dataset_counts c "
			    . "JOIN rag_datasets d ON d.id = c.dataset_id WHERE c.dataset_id = '$ds'");
};

# --- the first GET counts and stores ---------------------------------------------------

my $before = $read_next->();
my $counted_at = time;
is_deeply($progress->(rag(GET => "/dataset/$ds", undef, basic => $mine)->{json}),
	  [ 'processing', $DOCS, $DOCS, 0, 0 ], 'the first GET counts the 2,000 documents');
my $one_count = $read_next->() - $before;
cmp_ok($one_count, '>=', $DOCS, 'counting reads an index entry per document');
is($stored->(), "$DOCS 0 0 0 1", 'its counts are stored with the dataset\'s generation');

# --- ten more GETs read them back ----------------------------------------------------

$before = $read_next->();
for my $n (1 .. 8) {
	is_deeply($progress->(rag(GET => "/dataset/$ds", undef, basic => $mine)->{json}),
		  [ 'processing', $DOCS, $DOCS, 0, 0 ], "GET $n after it: the same counts");
}
for my $n (1 .. 2) {
	my $list = rag(GET => '/dataset', undef, basic => $mine)->{json}{datasets} // [];
	is_deeply([ map { [ $_->{dataset_id}, @{ $progress->($_) } ] } @$list ],
		  [ [ $ds, 'processing', $DOCS, $DOCS, 0, 0 ] ], "GET /dataset $n: the same counts");
}
my $walked = $read_next->() - $before;
cmp_ok($before, '>=', 0, 'MariaDB counts index entries read');
cmp_ok($walked, '<', $DOCS, 'ten GETs within the setting read fewer index entries than one count');

# --- another customer ----------------------------------------------------------------

json_response_is(rag(GET => "/dataset/$ds", undef, basic => $other), 404,
		 { detail => 'Dataset not found' }, "another customer's GET: 404");
is_deeply(rag(GET => '/dataset', undef, basic => $other)->{json}{datasets}, [],
	  "another customer's list is empty");

# --- a change the API did not make shows once the counts are older than the setting ----

mysql("UPDATE rag_documents SET status = 'failed', error = 'failed by hand' "
      . "WHERE dataset_id = '$ds' ORDER BY created_at, id LIMIT 5");
my $left = $KEEP_MS / 1000 + 0.3 - (time - $counted_at);
sleep($left) if $left > 0;
is_deeply($progress->(rag(GET => "/dataset/$ds", undef, basic => $mine)->{json}),
	  [ 'processing', $DOCS, $DOCS - 5, 0, 5 ],
	  'counts older than the setting are counted again: five failed');
is($stored->(), ($DOCS - 5) . ' 0 5 0 1', 'and stored again');

# --- the client's own change shows at once -------------------------------------------

is(add_documents($ds, [ { text => 'One more tide table.' } ], basic => $mine)->{status}, 202,
   'one more document: 202');
is_deeply($progress->(rag(GET => "/dataset/$ds", undef, basic => $mine)->{json}),
	  [ 'processing', $DOCS + 1, $DOCS + 1, 0, 0 ],
	  'the next GET shows it at once (the POST retried the failed five as well)');

# --- look-alike ids, killed workers, a MariaDB restart ------------------------------
# Counts are rows, not a worker's memory: they are shown by every worker,
# after workers die, and after MariaDB restarts, within the setting (a
# minute here, to outlast the restart).  An id in upper case is the same
# dataset to its owner and nobody's to another customer, and neither stores
# counts under another key.

reload_serve(conf_with($orig, dataset_counts_cache_ms => 60000));
my $now = [ 'processing', $DOCS + 1, $DOCS + 1, 0, 0 ];
my $shown_stored = sub {
	my ($how, $path) = @_;
	my $from = $read_next->();
	my $res = rag(GET => $path // "/dataset/$ds", undef, basic => $mine);
	is($res->{status}, 200, "$how: 200") or diag describe($res);
	is_deeply($progress->($res->{json} // {}), $now, "$how: the counts");
	my $walked = $read_next->() - $from;
	cmp_ok($walked, '<', $DOCS, "$how: shown from the stored counts, not counted")
		if $from >= 0;
};
mysql("DELETE FROM rag_dataset_counts WHERE dataset_id = '$ds'");
is_deeply($progress->(rag(GET => "/dataset/$ds", undef, basic => $mine)->{json}), $now,
	  'counted once more');
my $row = sub {
	return scalar mysql("SELECT CONCAT_WS(' ', dataset_id, counted_at, processing) "
			    . "FROM rag_dataset_counts WHERE dataset_id IN ('$ds', '" . uc($ds) . "')");
};
my $kept = $row->();
like($kept, qr/^\Q$ds\E \S+ \S+ ${\($DOCS + 1)}$/, 'one counts row, under the dataset\'s id');

$shown_stored->('the owner, id in upper case', '/dataset/' . uc($ds));
json_response_is(rag(GET => '/dataset/' . uc($ds), undef, basic => $other), 404,
		 { detail => 'Dataset not found' }, 'another customer, id in upper case: 404');
is($row->(), $kept, 'neither stored counts of its own');

my $master = master_pid();
my @workers = worker_pids($master);
ok(@workers > 0, 'the workers are there') or diag "master $master";
kill 'KILL', @workers;
my @fresh = wait_workers($master, scalar @workers, 30, \@workers);
is(scalar @fresh, scalar @workers, 'every worker killed with -9 was replaced');
$shown_stored->("after kill -9 of every worker ($_)") for 1 .. 2;

# Counted again just before, so that the minute outlasts the restart.
mysql("DELETE FROM rag_dataset_counts WHERE dataset_id = '$ds'");
is_deeply($progress->(rag(GET => "/dataset/$ds", undef, basic => $mine)->{json}), $now,
	  'counted again before MariaDB stops');
$kept = $row->();
$db_down = 1;
$r = dev('db-stop');
is($r->{exit}, 0, 'MariaDB stopped') or diag "$r->{out}$r->{err}";
json_response_is(rag(GET => "/dataset/$ds", undef, basic => $mine), 503,
		 { detail => 'Database unavailable' }, 'GET while MariaDB is down: 503');
$r = dev('db-start');
is($r->{exit}, 0, 'MariaDB started again') or diag "$r->{out}$r->{err}";
$db_down = 0 if $r->{exit} == 0;
ok(wait_until(60, sub { rag(GET => "/dataset/$ds", undef, basic => $mine)->{status} == 200 }),
   'GETs answer again after the restart');
is($row->(), $kept, 'the counts row outlived the restart, unchanged');
$shown_stored->("after MariaDB restarted ($_)") for 1 .. 2;

# --- the setting at 0: every GET counts, nothing is stored ---------------------------

reload_serve(conf_with($orig, dataset_counts_cache_ms => 0));
mysql("DELETE FROM rag_dataset_counts WHERE dataset_id = '$ds'");
$before = $read_next->();
for my $n (1 .. 2) {
	is_deeply($progress->(rag(GET => "/dataset/$ds", undef, basic => $mine)->{json}),
		  [ 'processing', $DOCS + 1, $DOCS + 1, 0, 0 ], "setting 0, GET $n: counted");
}
cmp_ok($read_next->() - $before, '>=', 2 * $DOCS, 'setting 0: each GET read every document\'s entry');
is($stored->(), '', 'setting 0: no counts stored');

# --- the counts go with the dataset --------------------------------------------------

reload_serve(conf_with($orig, dataset_counts_cache_ms => $KEEP_MS));
rag(GET => "/dataset/$ds", undef, basic => $mine);
is($stored->(), ($DOCS + 1) . ' 0 0 0 1', 'counts stored again');
# Two workers counting at once store in either order; the older counts
# (here: of an earlier generation than the stored ones) never replace them.
mysql("UPDATE rag_dataset_counts SET index_generation = index_generation + 1, processing = 7 "
      . "WHERE dataset_id = '$ds'");
is_deeply($progress->(rag(GET => "/dataset/$ds", undef, basic => $mine)->{json}),
	  [ 'processing', $DOCS + 1, $DOCS + 1, 0, 0 ], 'counts of another generation are not shown');
is($stored->(), '7 0 0 0 0', 'nor replaced by older ones');
is(rag(DELETE => "/dataset/$ds", undef, basic => $mine)->{status}, 204, 'the dataset is deleted');
is(mysql("SELECT COUNT(*) FROM rag_dataset_counts WHERE dataset_id = '$ds'"), 0,
   'its counts went with it');

$r = dev('work-start');
is($r->{exit}, 0, 'sluice work started again') or diag $r->{err};
reload_serve($orig);
$restored = 1;

done_testing();
