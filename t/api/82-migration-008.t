#!/usr/bin/perl
# Migration 008 on a service database of an older layout: a scratch
# database migrated to 007, filled with what older versions made (a
# storage table in <schema>_<hash>, pipelines loading into the schema they
# named, two customers sharing one table, a job naming the service
# database, a singer job with a second stream, a job that never ran), then
# migrated to 008.  Each table is moved, data and all, into the database
# the code now computes for it (or left, with the reason), and
# warehouse_moves says which; api_users.name compares byte for byte.

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use Test::More;

use JobsFixture qw(sql_quote);
use SluiceTest;

my $tag = "m8_$$";
my $db = "t82_$tag";
my ($A, $B) = ('aaaaaaaa-0000-4000-8000-00000000008a', 'bbbbbbbb-0000-4000-8000-00000000008b');
my $dir = tempdir(CLEANUP => 1);
mkdir "$dir/sql" or die;
my $sql_dir = env('SLUICE_ROOT') . '/sql';
opendir my $d, $sql_dir or die;
my @files = sort grep { /^\d{3}_[a-z0-9_]+\.sql$/ } readdir $d;
my @old = grep { $_ lt '008' } @files;
copy("$sql_dir/$_", "$dir/sql/$_") or die "$_: $!" for @old;

open my $fh, '>', "$dir/sluice.conf" or die;
print {$fh} "db_socket = " . env('SLUICE_DB_SOCKET') . "\ndb_name = $db\n"
    . "sql_dir = $dir/sql\n"
    # root over the socket: an account that can see and rename the old
    # tables, as docs/operations.md asks for this migration
    . "migrate_user = root\n";
close $fh;

my @dbs = ($db);
END { local ($?, $@); eval { mysql("DROP DATABASE IF EXISTS `$_`") for @dbs } }

sub migrate {
	my $r = run_cmd([ env('SLUICE_BIN'), 'migrate', '-c', "$dir/sluice.conf" ]);
	is($r->{exit}, 0, 'sluice migrate') or diag $r->{err};
	return $r;
}

mysql("CREATE DATABASE `$db` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci");
migrate();
sub sqlq { mysql("USE `$db`; $_[0]") }

# --- what an older version left ----------------------------------------------------
my $old_storage = "sales_$tag" . '_' . substr(sha256_hex("$A\nsales_$tag"), 0, 16);
push @dbs, $old_storage, "raw_$tag", "rawa_$tag", "sing_$tag", "never_$tag";
sqlq("INSERT INTO customers (id, name) VALUES ('$A', 'a-$tag'), ('$B', 'b-$tag')");
sqlq("INSERT INTO warehouse_tables (id, customer_id, schema_name, table_name, wh_schema, wh_table, "
  . "columns_json) VALUES ('11111111-1111-4111-8111-11111111118a', '$A', 'sales_$tag', 'orders', "
  . "'$old_storage', 'orders', '[]')");
sqlq("INSERT INTO api_users (name, password_hash) VALUES ('demo8', 'x')");
sqlq("INSERT INTO pipelines (id, customer_id, name) VALUES ('pa', '$A', 'a'), ('pb', '$B', 'b')");
my %jobs = (
	pa_0 => [ 'pa', 'file_storage', "raw_$tag", 'shared_t' ],
	pb_0 => [ 'pb', 'file_storage', "raw_$tag", 'shared_t' ],
	pa_1 => [ 'pa', 'file_storage', "RawA_$tag", 't1' ],
	pa_2 => [ 'pa', 'singer', "sing_$tag", 'items' ],
	pa_3 => [ 'pa', 'file_storage', "never_$tag", 'ran' ],
	pa_4 => [ 'pa', 'file_storage', "RawA_$tag", 't1' ],
	pb_1 => [ 'pb', 'file_storage', $db, 'api_users' ],
);
my $i = 0;
for my $id (sort keys %jobs) {
	my ($p, $conn, $s, $tbl) = @{ $jobs{$id} };
	sqlq("INSERT INTO jobs (id, pipeline_id, job_index, name, connector, input, output) VALUES ("
	  . sql_quote($id) . ", '$p', " . $i++ . ", 'j', '$conn', '{}', "
	  . sql_quote(json_encode({ plugin => 'mariadb', raw => { table_schema => $s, table_name => $tbl } })) . ')');
}
push @dbs, "RawA_$tag";
mysql("CREATE DATABASE `$old_storage`; CREATE TABLE `$old_storage`.orders (id INT); "
    . "INSERT INTO `$old_storage`.orders VALUES (1), (2)");
mysql("CREATE DATABASE raw_$tag; CREATE TABLE raw_$tag.shared_t (id INT)");
mysql("CREATE DATABASE RawA_$tag; CREATE TABLE RawA_$tag.t1 (id INT); INSERT INTO RawA_$tag.t1 VALUES (7)");
mysql("CREATE DATABASE sing_$tag; CREATE TABLE sing_$tag.items (id INT); "
    . "CREATE TABLE sing_$tag.items__audit (id INT); CREATE TABLE sing_$tag.itemsx (id INT)");

# --- 008 ------------------------------------------------------------------------------
copy("$sql_dir/$_", "$dir/sql/$_") or die for grep { $_ ge '008' && $_ lt '009' } @files;
like(migrate()->{out}, qr/applied 1 migration/, '008 applied');

my $new_storage = "wh_sales_$tag" . '_' . substr($old_storage, -16);
is($new_storage, wh_schema($A, "sales_$tag"), 'the storage table goes where the code now puts it');
push @dbs, $new_storage, map { wh_schema($_->[0], $_->[1]) }
	[ $A, "raw_$tag" ], [ $B, "raw_$tag" ], [ $A, "RawA_$tag" ], [ $A, "sing_$tag" ],
	[ $A, "never_$tag" ], [ $B, $db ];

my %moves;
for (sqlq('SELECT source, ref_id, from_schema, from_table, to_schema, to_table, outcome FROM warehouse_moves')) {
	my ($src, $ref, $fs, $ft, $ts, $tt, $out) = @$_;
	$moves{"$ref $ft"} = { from => "$fs.$ft", to => "$ts.$tt", outcome => $out };
}
sub move_is {
	my ($key, $to, $outcome, $name) = @_;
	is_deeply([ @{ $moves{$key} || {} }{qw(to outcome)} ], [ $to, $outcome ], $name);
}
move_is("11111111-1111-4111-8111-11111111118a orders", "$new_storage.orders", 'moved', 'storage table: moved');
is(scalar mysql("SELECT GROUP_CONCAT(id ORDER BY id) FROM `$new_storage`.orders"), '1,2', 'with its rows');
is(scalar sqlq("SELECT wh_schema FROM warehouse_tables"), $new_storage, 'its row points at the new database');

my $rawa = wh_schema($A, "RawA_$tag");
move_is('pa_1 t1', "$rawa.t1", 'moved', 'a pipeline destination: moved');
is(scalar mysql("SELECT id FROM `$rawa`.t1"), 7, 'with its rows');
move_is('pa_4 t1', "$rawa.t1", 'moved', 'a second job of the customer on that table: moved with it');
my $sing = wh_schema($A, "sing_$tag");
move_is('pa_2 items', "$sing.items", 'moved', 'singer: the job stream moved');
move_is('pa_2 items__audit', "$sing.items__audit", 'moved', 'singer: the other stream moved');
ok(!exists $moves{'pa_2 itemsx'}, 'a table that only starts like it stays');
move_is('pa_0 shared_t', wh_schema($A, "raw_$tag") . '.shared_t', 'shared', 'two customers on one table: shared');
move_is('pb_0 shared_t', wh_schema($B, "raw_$tag") . '.shared_t', 'shared', '... for both');
is(scalar mysql("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'raw_$tag'"), 1,
   'the shared table stays where it was');
move_is('pb_1 api_users', wh_schema($B, $db) . '.api_users', 'protected', 'the service database: protected');
is(scalar sqlq("SELECT COUNT(*) FROM api_users"), 1, 'api_users stays');
move_is('pa_3 ran', wh_schema($A, "never_$tag") . '.ran', 'absent', 'a job that never ran: absent');

# --- exact user names -------------------------------------------------------------------
is(scalar mysql("SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$db' "
	. "AND TABLE_NAME = 'api_users' AND COLUMN_NAME = 'name'"), 'utf8mb4_nopad_bin',
   'api_users.name: utf8mb4_nopad_bin');
is(scalar sqlq("SELECT COUNT(*) FROM api_users WHERE name IN ('DEMO8', 'demo8 ', 'd\xc3\xa9mo8')"), 0,
   'look-alikes of a name match nothing');
is(scalar sqlq("SELECT COUNT(*) FROM api_users WHERE name = 'demo8'"), 1, 'the name itself does');

# Applying again changes nothing.
like(migrate()->{out}, qr/applied 0 migration/, 'idempotent');
done_testing();
