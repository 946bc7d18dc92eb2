#!/usr/bin/perl
# Every customer writes only into warehouse databases of its own.  The
# logical output.raw.table_schema (and a storage table's schema_name) maps
# to wh_<schema>_<16 hex of the customer and schema>: two customers naming
# the same schema and table never meet, a customer naming another's
# physical database lands in one of its own, the service database and
# MariaDB's own schemas are refused with 400, and the API keeps showing the
# logical names.  A job that still names the service database (written
# before this check existed) loads into the customer's own database too.

use strict;
use warnings;

use Test::More;

use ConnectorFixture;
use JobsFixture;
use SluiceTest;

my $t = "$$" . time;
my ($ta, $ca) = customer_token("conf-a-$t");
my ($tb, $cb) = customer_token("conf-b-$t");
my $LOGICAL = 'c80';
my $service_db = (conf_read() =~ /^[ \t]*db_name[ \t]*=[ \t]*(\S+)/m)[0] // 'sluice';
my @made = (wh_schema($ca, $LOGICAL), wh_schema($cb, $LOGICAL));

# The same relative file in both customers' storage areas, other rows.
put_file(storage_area($ca) . '/t80/x.csv', "id,who\n1,a\n2,a\n3,a\n");
put_file(storage_area($cb) . '/t80/x.csv', "id,who\n9,b\n8,b\n");

sub files_job {
	my ($token, $schema, $table) = @_;
	return make_pipeline($token, [ { input => { connector => 'file_storage',
		plugin => 'local', prefix => 't80/' }, table_name => $table,
		table_schema => $schema } ]);
}

sub who {
	my ($db, $table) = @_;
	return join ',', map { $_->[0] } mysql("SELECT CONCAT(id, who) FROM `$db`.`$table` ORDER BY id");
}

# --- two customers, one logical schema and table --------------------------------
my $pa = files_job($ta, $LOGICAL, 'orders');
my $pb = files_job($tb, $LOGICAL, 'orders');
is(run_pipeline($ta, $ca, $pa->{pipeline_id})->{status}, 'SUCCESS', 'A loads');
is(run_pipeline($tb, $cb, $pb->{pipeline_id})->{status}, 'SUCCESS', 'B loads the same logical table');
isnt(wh_schema($ca, $LOGICAL), wh_schema($cb, $LOGICAL), 'two databases');
is(who(wh_schema($ca, $LOGICAL), 'orders'), '1a,2a,3a', "A's rows in A's database, not replaced by B's");
is(who(wh_schema($cb, $LOGICAL), 'orders'), '8b,9b', "B's rows in B's database");
is(scalar mysql("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '$LOGICAL'"),
   0, 'nothing lands in a database of the logical name');
like(log_text($ta, (http(GET => "/platform/pipeline/$pa->{pipeline_id}/pipeline_run",
	{ token => $ta })->{json}{data}{runs}[0]{run_id})),
     qr/into \Q@{[ wh_schema($ca, $LOGICAL) ]}\E\.orders/, "the run log names A's database");

# The API shows what the customer named.
my $got = http(GET => "/platform/pipeline/$pa->{pipeline_id}", { token => $ta });
is_deeply($got->{json}{jobs}[0]{output}, { plugin => 'mariadb',
	raw => { table_schema => $LOGICAL, table_name => 'orders' } },
	'the pipeline shows the logical schema');

# Another letter case is the same schema (of the same customer).
my $pc = files_job($ta, uc $LOGICAL, 'orders_uc');
is(run_pipeline($ta, $ca, $pc->{pipeline_id})->{status}, 'SUCCESS', 'A loads into C80');
is(who(wh_schema($ca, $LOGICAL), 'orders_uc'), '1a,2a,3a', 'C80 is c80');

# --- naming another customer's database -----------------------------------------
my $a_db = wh_schema($ca, $LOGICAL);
my $pe = files_job($tb, $a_db, 'orders');
is(run_pipeline($tb, $cb, $pe->{pipeline_id})->{status}, 'SUCCESS',
   "B naming A's database as its schema: runs");
push @made, wh_schema($cb, $a_db);
is(who(wh_schema($cb, $a_db), 'orders'), '8b,9b', 'into a database of its own');
is(who($a_db, 'orders'), '1a,2a,3a', "A's table untouched");

# --- the service database and MariaDB's own: 400 --------------------------------
my $before = scalar mysql("SELECT COUNT(*) FROM pipelines WHERE customer_id = '$ca'");
for my $schema ($service_db, uc $service_db, qw(mysql MySQL information_schema
		INFORMATION_SCHEMA performance_schema sys)) {
	my $res = http(POST => '/platform/pipeline', { token => $ta, json => { name => 'x',
		cron => undef, jobs => [ { input => { connector => 'file_storage', plugin => 'local',
		prefix => 't80/' }, output => { plugin => 'mariadb', raw => {
		table_schema => $schema, table_name => 'api_users' } } } ] } });
	json_response_is($res, 400, undef, "table_schema $schema");
	my $d = ref $res->{json} eq 'HASH' ? $res->{json}{detail} : {};
	is($d->{error}, 'ValidationError', "$schema: ValidationError");
	my ($e) = grep { $_->{field} eq 'jobs[0].output.raw.table_schema' } @{ $d->{validation_errors} || [] };
	is($e && $e->{error_code}, 'RESERVED_SCHEMA', "$schema: RESERVED_SCHEMA on the field")
		or diag describe($res);
}
is(scalar mysql("SELECT COUNT(*) FROM pipelines WHERE customer_id = '$ca'"), $before,
   'no pipeline made');

# Storage explorer tables: the same names are refused there.
my $st = token(customer => "conf-a-$t", permissions => [qw(STORAGE_EXPLORER.READ STORAGE_EXPLORER.WRITE)]);
for my $schema ('mysql', $service_db, 'Performance_Schema') {
	my $res = http(POST => '/storage-explorer/tables', { token => $st, json => {
		table_name => 'x', schema_name => $schema, columns => [ { name => 'id', type => 'INTEGER' } ] } });
	json_response_is($res, 400, undef, "storage table in $schema");
	is($res->{json}{error}, 'invalid_schema_name', "$schema: invalid_schema_name");
	like($res->{json}{message}, qr/reserved/, "$schema: the message says it is reserved");
	$res = http(POST => '/storage-explorer/tables/validate-name', { token => $st,
		json => { table_name => 'x', schema_name => $schema } });
	is($res->{status}, 200, "validate-name of schema $schema: 200");
	is($res->{json}{valid}, JSON::PP::false, "validate-name of schema $schema: not valid");
}
# A storage table of schema c80 is in the same database as A's pipeline tables.
my $res = http(POST => '/storage-explorer/tables', { token => $st, json => {
	table_name => 'st80', schema_name => $LOGICAL, columns => [ { name => 'id', type => 'INTEGER' } ] } });
is($res->{status}, 201, 'storage table in c80');
is($res->{json}{warehouse_schema}, $a_db, 'one mapping for both areas');
is($res->{json}{schema_name}, $LOGICAL, 'the logical schema shown');

# --- a job written before the check, naming the service database ----------------
my $users = scalar mysql('SELECT COUNT(*) FROM api_users');
my $pl = files_job($ta, 'legacy80', 'api_users');
mysql("UPDATE jobs SET output = JSON_SET(output, '\$.raw.table_schema', '$service_db') "
    . "WHERE id = " . sql_quote($pl->{job_ids}[0]));
is(run_pipeline($ta, $ca, $pl->{pipeline_id})->{status}, 'SUCCESS',
   'a job naming the service database still runs');
push @made, wh_schema($ca, $service_db);
is(who(wh_schema($ca, $service_db), 'api_users'), '1a,2a,3a',
   "into the customer's own database of that name");
is(scalar mysql('SELECT COUNT(*) FROM api_users'), $users, 'the service\'s api_users untouched');
my ($u, $pw) = split /:/, env('SLUICE_DEMO_BASIC'), 2;
is(http(GET => '/_test/basic', { basic => "$u:$pw" })->{status}, 200, 'the demo login still works');

drop_schema($_) for @made;
system('rm', '-rf', storage_area($ca) . '/t80', storage_area($cb) . '/t80');
done_testing();
