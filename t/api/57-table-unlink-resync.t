#!/usr/bin/perl
# A link's life after it is made: a new version of the linked file reloads
# the table (its rows replaced, row_count and last_sync updated, one load per
# upload, never two at once); POST .../sync reloads by hand; DELETE unlinks
# (inactive, the rows stay, not reloaded any more); linking again makes it
# active and reloads; a version that no longer fits fails the link and
# leaves the rows; another customer gets 404 everywhere; a sluice work
# killed mid-reload leaves the old rows and the reload runs again.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use StorageTest;
use TablesFixture;

my $t = tag();
my ($cid, $tok) = customer_with_token("rs-a-$t");
my ($cid_b, $tok_b) = customer_with_token("rs-b-$t");
my (undef, $reader) = customer_with_token("rs-a-$t", 'STORAGE_EXPLORER.READ');
my $folder = "resync/$t";

END {
	local ($?, $@);
	eval { dev('work-start'); 1 } or print STDERR "# restarting sluice work failed: $@";
}

# A version of the file: one row per [id, name, amount].
sub csv_of { join '', "id,name,amount\n", map { "$_->[0],$_->[1],$_->[2]\n" } @_ }

sub put_version {
	my ($token, @rows) = @_;
	my $res = upload($token, $folder, [ 'orders.csv', csv_of(@rows) ]);
	is($res->{status}, 201, 'upload a version of ' . scalar(@rows) . ' rows') or diag describe($res);
	return $res->{json}{files}[0]{dataset_id};
}

sub loads_of { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'storage_link_load' "
		   . "AND ref_id = '$_[0]'") }

my @v1 = ([ 1, 'ada', '1.50' ], [ 2, 'bob', '2.00' ], [ 3, 'cy', '3.25' ]);
my $ds = put_version($tok, @v1);
is(wait_dataset($tok, $ds)->{status}, 'ready', 'first version inferred');
my $schema = st(GET => "/storage-explorer/datasets/$ds", $tok)->{json}{schema};
my $table = create_table($tok, 'orders_rs', columns_of($schema));
my $tid = $table->{table_id};
my $wh = "`$table->{warehouse_schema}`.`$table->{warehouse_table}`";
sub wh_rows { [ mysql("SELECT id, name, amount FROM $wh ORDER BY id") ] }

my $res = link_dataset($tok, $tid, $ds);
json_response_is($res, 201, undef, 'link');
my $link_id = $res->{json}{link_id};
my $e = wait_settled($tok, $tid, $ds);
is($e->{sync_status}, 'done', 'first load done') or diag explain $e;
is($e->{row_count}, 3, 'row_count 3');
is_deeply(wh_rows(), [ @v1 ], 'the table holds the first version');
my $last = $e->{last_sync};

# --- a new version of the file reloads the table ---------------------------------------------

my $loads = loads_of($tid);
my @v2 = ([ 1, 'ada', '1.50' ], [ 2, 'bob', '2.50' ], [ 3, 'cy', '3.25' ], [ 4, 'dee', '4.00' ]);
is(put_version($tok, @v2), $ds, 'the same dataset');
$e = wait_settled($tok, $tid, $ds);
ok($e, 'the reload ended') or BAIL_OUT('no reload');
is($e->{sync_status}, 'done', 'reload done') or diag explain $e;
is($e->{row_count}, 4, 'row_count 4');
is($e->{status}, 'active', 'still active');
ok($e->{last_sync} gt $last, "last_sync later ($e->{last_sync} > $last)");
is_deeply(wh_rows(), [ @v2 ], 'the table holds exactly the 4 new rows');
is(loads_of($tid), $loads + 1, 'one load for the upload');
is(st(GET => "/storage-explorer/tables/$tid/datasets", $tok)->{json}{total_rows}, 4, 'total_rows 4');
$last = $e->{last_sync};

# --- POST .../sync by hand ------------------------------------------------------------------------

$res = st(POST => "/storage-explorer/tables/$tid/datasets/$ds/sync", $tok);
json_response_is($res, 202, undef, 'sync: 202');
is($res->{json}{link_id}, $link_id, 'the link');
is($res->{json}{table_id}, $tid, 'table_id');
is($res->{json}{dataset_id}, $ds, 'dataset_id');
is($res->{json}{status}, 'active', 'active');
like($res->{json}{sync_status}, qr/^(pending|done)$/, 'a load pending (or done already)');
$e = wait_settled($tok, $tid, $ds);
is($e->{sync_status}, 'done', 'sync done');
ok($e->{last_sync} gt $last, 'last_sync later again');
is_deeply(wh_rows(), [ @v2 ], 'the same 4 rows, none twice');
$last = $e->{last_sync};

# --- query parameters, permissions and another customer ---------------------------------------------

json_response_is(st(POST => "/storage-explorer/tables/$tid/datasets/$ds/sync?force=true", $tok), 400,
		 { error => 'invalid_query', message => 'force is not a known query parameter' },
		 'sync with a query parameter: 400 naming it');
json_response_is(st(DELETE => "/storage-explorer/tables/$tid/datasets/$ds?cascade=1", $tok), 400,
		 { error => 'invalid_query', message => 'cascade is not a known query parameter' },
		 'unlink with a query parameter: 400 naming it');
is(st(DELETE => "/storage-explorer/tables/$tid/datasets/$ds", $reader)->{status}, 403, 'READ may not unlink');
is(st(POST => "/storage-explorer/tables/$tid/datasets/$ds/sync", $reader)->{status}, 403, 'READ may not sync');
is(http(DELETE => "/storage-explorer/tables/$tid/datasets/$ds")->{status}, 401, 'no token: 401');

my $tnf = { error => 'table_not_found', message => 'Table not found' };
my $lnf = { error => 'link_not_found', message => 'The dataset is not linked to this table' };
json_response_is(st(DELETE => "/storage-explorer/tables/$tid/datasets/$ds", $tok_b), 404, $tnf,
		 "A's link unlinked by B: 404");
json_response_is(st(POST => "/storage-explorer/tables/$tid/datasets/$ds/sync", $tok_b), 404, $tnf,
		 "A's link synced by B: 404");
my $b_table = create_table($tok_b, 'orders_rs', columns_of($schema));
json_response_is(st(DELETE => "/storage-explorer/tables/$b_table->{table_id}/datasets/$ds", $tok_b), 404,
		 $lnf, "B's table with A's dataset: 404");
json_response_is(st(POST => "/storage-explorer/tables/$b_table->{table_id}/datasets/$ds/sync", $tok_b), 404,
		 $lnf, "B's table with A's dataset, sync: 404");
json_response_is(st(DELETE => "/storage-explorer/tables/$tid/datasets/00000000-0000-4000-8000-000000000000",
		    $tok), 404, $lnf, 'unknown dataset: 404');
json_response_is(st(POST => "/storage-explorer/tables/$tid/datasets/nope/sync", $tok), 404, $lnf,
		 'malformed dataset id: 404');
is(table_entry($tok, $tid, $ds)->{status}, 'active', 'all that left the link active');
is_deeply(wh_rows(), [ @v2 ], 'and the rows alone');

# --- unlink: inactive, the rows stay ----------------------------------------------------------------

$res = st(DELETE => "/storage-explorer/tables/$tid/datasets/$ds", $tok);
json_response_is($res, 200, undef, 'unlink: 200');
is($res->{json}{link_id}, $link_id, 'the link');
is($res->{json}{status}, 'inactive', 'inactive');
is($res->{json}{row_count}, 4, 'its row_count kept');
$e = table_entry($tok, $tid, $ds);
is($e->{status}, 'inactive', 'listed as inactive');
is($e->{row_count}, 4, 'listed with its rows');
is_deeply(wh_rows(), [ @v2 ], 'the table keeps its rows');
$res = st(DELETE => "/storage-explorer/tables/$tid/datasets/$ds", $tok);
json_response_is($res, 200, undef, 'unlink again: 200, nothing changes');
is($res->{json}{status}, 'inactive', 'still inactive');
json_response_is(st(POST => "/storage-explorer/tables/$tid/datasets/$ds/sync", $tok), 409,
		 { error => 'link_inactive', link_id => $link_id,
		   message => 'The link is inactive: link the dataset to the table again to load it' },
		 'sync of an inactive link: 409');

# A new version while unlinked: inferred, the table not reloaded.
$loads = loads_of($tid);
my @v3 = ([ 7, 'gus', '7.00' ], [ 8, 'hal', '8.00' ]);
put_version($tok, @v3);
is(wait_dataset($tok, $ds)->{status}, 'ready', 'the new version inferred');
is(work_unsettled('storage_infer', $ds), 0, 'its inference settled');
is(loads_of($tid), $loads, 'no load queued for an inactive link');
is_deeply(wh_rows(), [ @v2 ], 'the table keeps the old rows');
is(table_entry($tok, $tid, $ds)->{last_sync}, $last, 'last_sync unchanged');

# --- link again: active, checked and reloaded ----------------------------------------------------------

$res = link_dataset($tok, $tid, $ds);
json_response_is($res, 201, undef, 'link again: 201');
is($res->{json}{link_id}, $link_id, 'the same link');
is($res->{json}{status}, 'active', 'active again');
is($res->{json}{validation}{compatible}, true, 'checked again');
$e = wait_settled($tok, $tid, $ds);
is($e->{sync_status}, 'done', 'reloaded');
is($e->{row_count}, 2, 'row_count of the current version');
is_deeply(wh_rows(), [ @v3 ], 'the table holds the current version, the old rows replaced');
json_response_is(link_dataset($tok, $tid, $ds), 409, { error => 'already_linked', link_id => $link_id,
		 message => 'The dataset is already linked to this table' }, 'an active link: 409');
$last = $e->{last_sync};

# --- three uploads in a row ---------------------------------------------------------------------------

$loads = loads_of($tid);
my @v4 = map { [ $_, "n$_", "$_.00" ] } 1 .. 5;
my @v5 = ([ 9, 'solo', '9.00' ]);
my @v6 = map { [ $_ + 20, "m$_", "$_.50" ] } 1 .. 6;
put_version($tok, $_->@*) for \@v4, \@v5, \@v6;
$e = wait_settled($tok, $tid, $ds);
is($e->{sync_status}, 'done', 'loads done') or diag explain $e;
is($e->{row_count}, 6, 'row_count of the last version');
is_deeply(wh_rows(), [ @v6 ], 'the table holds the last version');
my $n = loads_of($tid) - $loads;
ok($n >= 1 && $n <= 3, "at most one load per upload ($n)");
my @spans = mysql("SELECT claimed_at, finished_at FROM work_queue WHERE kind = 'storage_link_load' "
		. "AND ref_id = '$tid' AND status = 'done' ORDER BY claimed_at");
my $overlap = grep { $spans[$_][0] lt $spans[$_ - 1][1] } 1 .. $#spans;
is($overlap, 0, 'no two loads of the table ran at once');

# --- a version that no longer fits: the link fails, the rows stay ------------------------------------------

my $res2 = upload($tok, $folder, [ 'orders.csv', "id,amount\n1,2.00\n" ]);
is($res2->{status}, 201, 'upload a version without the name column');
$e = wait_settled($tok, $tid, $ds);
is($e->{sync_status}, 'failed', 'the reload failed') or diag explain $e;
is($e->{status}, 'inactive', 'the link inactive');
like($e->{error} // '', qr/no column 'name'/, 'the error names the column');
is_deeply(wh_rows(), [ @v6 ], 'the table keeps its rows');

# --- sluice work killed with kill -9 in the middle of a reload ------------------------------------------

my $big_table = create_table($tok, 'orders_big', [ { name => 'id', type => 'BIGINT', nullable => false },
	{ name => 'name', type => 'VARCHAR(40)' }, { name => 'amount', type => 'DECIMAL(12,2)' } ]);
my $btid = $big_table->{table_id};
my $bwh = "`$big_table->{warehouse_schema}`.`$big_table->{warehouse_table}`";
my $bfolder = "resync-big/$t";
$res = upload($tok, $bfolder, [ 'big.csv', csv_of(@v1) ]);
my $bds = $res->{json}{files}[0]{dataset_id};
is(wait_dataset($tok, $bds)->{status}, 'ready', 'a small first version');
json_response_is(link_dataset($tok, $btid, $bds), 201, undef, 'linked');
is(wait_settled($tok, $btid, $bds)->{row_count}, 3, 'its 3 rows loaded');

my $N = 300000;
$res = upload($tok, $bfolder, [ 'big.csv', csv_of(map { [ $_, "n$_", "$_.50" ] } 1 .. $N) ]);
is($res->{status}, 201, "a version of $N rows");
# Mid-reload: the load's uncommitted rows are neither the old 3 nor all.
my $dirty = sub { scalar mysql("SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED; "
			      . "SELECT COUNT(*) FROM $bwh") };
ok(wait_until(120, sub {
	my $n = $dirty->();
	$n > 3 && $n < $N;
}, 0.05), 'the reload is under way') or diag 'dirty count ' . $dirty->();
my $work = do { open my $fh, '<', env('SLUICE_WORK_PID') or die $!; my $p = <$fh>; $p =~ s/\s+//g; $p };
ok(kill('KILL', $work), "kill -9 sluice work $work");
ok(wait_until(10, sub { !proc_alive($work) }), 'sluice work is gone');
is_deeply([ mysql("SELECT id, name, amount FROM $bwh ORDER BY id") ], [ @v1 ],
	  'the table holds the old rows, none of the new');
ok(wait_until(30, sub { $dirty->() == 3 }, 0.1), 'the killed load rolled back');
is(mysql("SELECT status FROM work_queue WHERE kind = 'storage_link_load' AND ref_id = '$btid' "
	 . "ORDER BY id DESC LIMIT 1"), 'running', 'its queue row still claimed by the dead process');
my $r = dev('work-start');
is($r->{exit}, 0, 'a new sluice work') or diag $r->{err};
$e = wait_settled($tok, $btid, $bds);
is($e->{sync_status}, 'done', 'the reload ran again') or diag explain $e;
is($e->{row_count}, $N, "row_count $N");
is_deeply([ mysql("SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id) FROM $bwh") ], [ [ $N, $N, 1, $N ] ],
	  'the table holds the new rows, each once');
is(mysql("SELECT attempts FROM work_queue WHERE kind = 'storage_link_load' AND ref_id = '$btid' "
	 . "ORDER BY id DESC LIMIT 1"), 2, 'on its second attempt');

done_testing();
