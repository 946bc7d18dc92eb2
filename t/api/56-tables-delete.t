#!/usr/bin/perl
# DELETE /storage-explorer/tables/{tableId}: the warehouse table is dropped
# (checked in information_schema of the warehouse), the row and its links
# go; 409 while a link is active unless force=true (inactive links do not
# hold it), 409 while a load into it runs; a load queued for one of its
# links afterwards ends without recreating it; a second delete and another
# customer's table are 404s and remove nothing; unknown parameters are 400s.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use TablesFixture;

my $t = tag();
my ($cid, $tok) = customer_with_token("td-a-$t");
my ($cid_b, $tok_b) = customer_with_token("td-b-$t");
my (undef, $reader) = customer_with_token("td-a-$t", 'STORAGE_EXPLORER.READ');
my $COLS = [ { name => 'id', type => 'INTEGER' } ];
my $csv = "id\n1\n2\n";

sub wh_exists {
	my ($table) = @_;
	return scalar mysql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
	    . sql_quote($table->{warehouse_schema}) . ' AND TABLE_NAME = '
	    . sql_quote($table->{warehouse_table}));
}
sub del_table { my ($id, $q, $token) = @_;
		return st(DELETE => "/storage-explorer/tables/$id" . ($q // ''), $token // $tok) }
sub linked {
	my ($table) = @_;
	my $ds = seed_dataset($cid, content => $csv, rows => 2, columns => [ [ 'id', 'INTEGER', 0 ] ]);
	my $res = link_dataset($tok, $table->{table_id}, $ds);
	die 'link: ' . describe($res) unless $res->{status} == 201;
	my $l = wait_link($tok, $table->{table_id}, $res->{json}{link_id});
	die 'link load did not end' unless $l && $l->{sync_status} eq 'done';
	return ($ds, $res->{json}{link_id});
}

# --- an unlinked table: dropped ------------------------------------------------------------

my $plain = create_table($tok, "plain_$t", $COLS);
is(wh_exists($plain), 1, 'the warehouse table exists');
my $theirs = create_table($tok_b, "plain_$t", $COLS);

is(del_table($plain->{table_id}, '', $reader)->{status}, 403, 'READ only: 403');
json_response_is(del_table($plain->{table_id}, '', $tok_b), 404,
		 { error => 'table_not_found', message => 'Table not found' },
		 "another customer's token: 404 like unknown");
json_response_is(del_table($theirs->{table_id}), 404,
		 { error => 'table_not_found', message => 'Table not found' },
		 "another customer's table: 404");
is(wh_exists($theirs), 1, 'their warehouse table stays');
is(wh_exists($plain), 1, 'ours too');
json_response_is(del_table($plain->{table_id}, '?cascade=true'), 400,
		 { error => 'invalid_query', message => 'cascade is not a known query parameter' },
		 'an unknown parameter: 400 naming it');
json_response_is(del_table($plain->{table_id}, '?force=1&force=1'), 400,
		 { error => 'invalid_query', message => 'force is given more than once' },
		 'force twice: 400');
is(wh_exists($plain), 1, 'refused calls drop nothing');

my $res = del_table(uc $plain->{table_id});
json_response_is($res, 200, { table_id => $plain->{table_id}, table_name => "plain_$t",
		 deleted => true, links_removed => 0 }, 'delete (id in any case): 200');
is(wh_exists($plain), 0, 'the warehouse table is dropped (information_schema)');
is(mysql("SELECT COUNT(*) FROM warehouse_tables WHERE id = '$plain->{table_id}'"), 0, 'the row is gone');
is(st(GET => "/storage-explorer/tables/$plain->{table_id}", $tok)->{status}, 404, 'GET: 404');
ok(!(grep { $_->{table_id} eq $plain->{table_id} }
     @{ st(GET => '/storage-explorer/tables?limit=100', $tok)->{json}{tables} }), 'not listed');
json_response_is(del_table($plain->{table_id}), 404,
		 { error => 'table_not_found', message => 'Table not found' }, 'second delete: 404');
is(del_table('no-such-id')->{status}, 404, 'a malformed id: 404');
is(wh_exists($theirs), 1, "the other customer's same-named table is untouched");

# the name is free again: a new table of it is a new, empty warehouse table
my $again = create_table($tok, "plain_$t", $COLS);
is(wh_exists($again), 1, 'the same name can be created again');

# --- linked: 409, force: 200 with its links ----------------------------------------------------

my $tbl = create_table($tok, "linked_$t", $COLS);
my ($ds, $link_id) = linked($tbl);
is(wh_count($tbl), 2, 'the load put its rows in');
$res = del_table($tbl->{table_id});
json_response_is($res, 409, { error => 'table_linked', table_id => $tbl->{table_id},
		 active_links => 1, message => 'The table has active links: unlink its datasets '
		 . 'first, or delete with force=true (its links go too)' }, 'an active link: 409');
is(wh_exists($tbl), 1, 'the table stays');
is(mysql("SELECT COUNT(*) FROM table_links WHERE id = '$link_id'"), 1, 'the link stays');
is(del_table($tbl->{table_id}, '?force=false')->{status}, 409, 'force=false: 409 too');

# a load of the table running (claimed elsewhere, heartbeat fresh): 409 table_busy
mysql("INSERT INTO work_queue (kind, ref_id, customer_id, status, claimed_by, claimed_at, "
      . "heartbeat_at) VALUES ('storage_link_load', '$tbl->{table_id}', '$cid', 'running', "
      . "'elsewhere.test:1', UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))");
json_response_is(del_table($tbl->{table_id}, '?force=true'), 409, { error => 'table_busy',
		 message => 'A load into the table is running: delete it once the load has ended' },
		 'a load running: 409 table_busy, even forced');
is(wh_exists($tbl), 1, 'nothing dropped');
mysql("DELETE FROM work_queue WHERE ref_id = '$tbl->{table_id}' AND claimed_by = 'elsewhere.test:1'");

$res = del_table($tbl->{table_id}, '?force=true');
json_response_is($res, 200, { table_id => $tbl->{table_id}, table_name => "linked_$t",
		 deleted => true, links_removed => 1 }, 'force=true: 200');
is(wh_exists($tbl), 0, 'the warehouse table is dropped');
is(mysql("SELECT COUNT(*) FROM table_links WHERE id = '$link_id'"), 0, 'the link is gone');
is(st(GET => "/storage-explorer/datasets/$ds", $tok)->{status}, 200, 'the dataset stays');

# a load queued for the table now ends without recreating it
mysql("INSERT INTO work_queue (kind, ref_id, customer_id) VALUES ('storage_link_load', "
      . "'$tbl->{table_id}', '$cid')");
my $item = mysql('SELECT MAX(id) FROM work_queue WHERE kind = \'storage_link_load\' AND '
		 . "ref_id = '$tbl->{table_id}'");
ok(wait_until(30, sub { mysql("SELECT status FROM work_queue WHERE id = $item") eq 'done' }),
   'a load queued after the delete ends (done)');
is(wh_exists($tbl), 0, 'and the table is not recreated');

# --- only inactive links: no force needed --------------------------------------------------------

my $tbl2 = create_table($tok, "inactive_$t", $COLS);
my ($ds2, $link2) = linked($tbl2);
is(st(DELETE => "/storage-explorer/tables/$tbl2->{table_id}/datasets/$ds2", $tok)->{status}, 200,
   'unlinked');
is(mysql("SELECT status FROM table_links WHERE id = '$link2'"), 'inactive', 'the link is inactive');
$res = del_table($tbl2->{table_id});
json_response_is($res, 200, { table_id => $tbl2->{table_id}, table_name => "inactive_$t",
		 deleted => true, links_removed => 1 }, 'an inactive link does not hold it');
is(wh_exists($tbl2), 0, 'dropped');

# --- a warehouse table dropped behind our back: the row still goes -----------------------------

my $tbl3 = create_table($tok, "gone_$t", $COLS);
mysql("DROP TABLE `$tbl3->{warehouse_schema}`.`$tbl3->{warehouse_table}`");
is(del_table($tbl3->{table_id})->{status}, 200, 'its warehouse table already gone: 200');
is(mysql("SELECT COUNT(*) FROM warehouse_tables WHERE id = '$tbl3->{table_id}'"), 0, 'row gone');

is(st(DELETE => "/storage-explorer/tables/$again->{table_id}", undef)->{status}, 401, 'no token: 401');
is(wh_exists($theirs), 1, "the other customer's table survived it all");

done_testing();
