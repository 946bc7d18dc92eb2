#!/usr/bin/perl
# MariaDB's own privileges are the second wall.  The loader account (what
# connectors and link loads write through) reaches the wh_... databases and
# the three state tables a load commits with its rows, and MariaDB itself
# refuses it everything else: writing or reading api_users, the migration
# record, customers, other databases.  The serving account (serve and
# work) reads and writes rows of the service database and nothing more:
# no DDL, no warehouse.  The config refuses a loader that is the serving
# account, and a service database inside the warehouse namespace.

use strict;
use warnings;

use File::Temp qw(tempdir);
use Test::More;

use SluiceTest;

my $db = (conf_read() =~ /^[ \t]*db_name[ \t]*=[ \t]*(\S+)/m)[0] // 'sluice';
my $probe = "wh_t81_probe_$$";

# Run SQL as an account: {exit, out, err}.
sub as {
	my ($who, $sql) = @_;
	my $cmd = env($who eq 'loader' ? 'SLUICE_LOADER_MYSQL' : 'SLUICE_APP_MYSQL');
	return run_cmd([ 'sh', '-c', "$cmd -N -B -e \"\$1\"", 'sh', $sql ]);
}

sub refused {
	my ($who, $sql, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = as($who, $sql);
	isnt($r->{exit}, 0, "$name: refused") or return;
	like($r->{err}, qr/ERROR (1142|1044|1045|1143|1227|1370) .*denied/,
	     "$name: by MariaDB's privileges") or diag $r->{err};
}

sub allowed {
	my ($who, $sql, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = as($who, $sql);
	is($r->{exit}, 0, "$name: allowed") or diag $r->{err};
	return $r->{out};
}

my $users = scalar mysql("SELECT COUNT(*) FROM `$db`.api_users");

# --- the loader ---------------------------------------------------------------
refused(loader => "INSERT INTO `$db`.api_users (name, password_hash) VALUES ('evil', 'x')",
	"loader INSERT INTO $db.api_users");
refused(loader => "UPDATE `$db`.api_users SET disabled = 1", "loader UPDATE $db.api_users");
refused(loader => "SELECT password_hash FROM `$db`.api_users", "loader SELECT $db.api_users");
refused(loader => "DELETE FROM `$db`.schema_migrations", "loader DELETE FROM $db.schema_migrations");
refused(loader => "INSERT INTO `$db`.customers (id, name) VALUES ('x81', 'x81')",
	"loader INSERT INTO $db.customers");
refused(loader => "UPDATE `$db`.pipelines SET name = 'x'", "loader UPDATE $db.pipelines");
refused(loader => "CREATE TABLE `$db`.x81 (a INT)", "loader CREATE TABLE in $db");
refused(loader => "DROP TABLE `$db`.job_state", "loader DROP TABLE $db.job_state");
refused(loader => "RENAME TABLE `$db`.api_users TO `$probe`.api_users", "loader RENAME a service table out");
refused(loader => 'CREATE TABLE mysql.x81 (a INT)', 'loader CREATE TABLE in mysql');
refused(loader => "CREATE DATABASE t81_$$", 'loader CREATE DATABASE outside wh_');
refused(loader => "CREATE DATABASE WH_t81_$$", 'loader CREATE DATABASE WH_ (case differs)');
is(scalar mysql("SELECT COUNT(*) FROM `$db`.api_users"), $users, 'api_users unchanged');

allowed(loader => "CREATE DATABASE $probe; CREATE TABLE $probe.t (a INT); "
	. "INSERT INTO $probe.t VALUES (1); RENAME TABLE $probe.t TO $probe.u; DROP DATABASE $probe",
	'loader makes, fills, renames and drops in a wh_ database');
is(allowed(loader => "SELECT COUNT(*) >= 0 FROM `$db`.job_state", 'loader reads job_state'),
   "1\n", 'job_state readable');
allowed(loader => "UPDATE `$db`.table_links SET row_count = row_count WHERE id = 'none'",
	'loader updates table_links');
allowed(loader => "UPDATE `$db`.file_storage_processed SET size_bytes = size_bytes WHERE id = 0",
	'loader updates file_storage_processed');

# --- the serving account --------------------------------------------------------
is(allowed(app => "SELECT COUNT(*) FROM `$db`.customers", 'serving account reads rows'),
   scalar(mysql("SELECT COUNT(*) FROM `$db`.customers")) . "\n", 'the same rows');
refused(app => "CREATE TABLE `$db`.x81 (a INT)", 'serving account CREATE TABLE');
refused(app => "ALTER TABLE `$db`.api_users ADD COLUMN x INT", 'serving account ALTER TABLE');
refused(app => "DROP TABLE `$db`.run_logs", 'serving account DROP TABLE');
refused(app => "CREATE DATABASE $probe", 'serving account CREATE DATABASE wh_');
mysql("CREATE DATABASE $probe");
mysql("CREATE TABLE $probe.t (a INT)");
refused(app => "SELECT * FROM $probe.t", 'serving account reads a warehouse database');
refused(app => "INSERT INTO $probe.t VALUES (1)", 'serving account writes a warehouse database');
mysql("DROP DATABASE $probe");
refused(app => "SELECT * FROM mysql.user", 'serving account reads mysql.user');

# --- the config ------------------------------------------------------------------
my $dir = tempdir(CLEANUP => 1);
for my $case ([ 'warehouse_user = db_user', warehouse_user => 'sluice', qr/warehouse_user must not be db_user/ ],
	      [ 'db_name in the warehouse namespace', db_name => 'wh_sluice', qr/db_name must not start with 'wh_'/ ]) {
	my ($name, $k, $v, $re) = @$case;
	open my $fh, '>', "$dir/c.conf" or die;
	print {$fh} conf_with(conf_read(), $k => $v);
	close $fh;
	my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'show', 'demo', '-c', "$dir/c.conf" ]);
	is($r->{exit}, 78, "$name: a config error (78)");
	like($r->{err}, $re, "$name: says why");
}

# sluice migrate runs as its own account (migrate_user of the test stack).
my $r = run_cmd([ env('SLUICE_BIN'), 'migrate', '-c', env('SLUICE_CONF') ]);
is($r->{exit}, 0, 'sluice migrate as the migrate account') or diag $r->{err};
like(conf_read(), qr/^[ \t]*migrate_user[ \t]*=[ \t]*sluice_migrate/m, 'which is not db_user');

done_testing();
