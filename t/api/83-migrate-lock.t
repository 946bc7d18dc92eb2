#!/usr/bin/perl
# sluice migrate's lock is a row (GET_LOCK is per server, so on a Galera
# cluster two migrates on two nodes would both hold it).  A migrate killed
# mid-way (kill -9, OOM) leaves the row; the next migrate on the same
# server sees that the session the row names is gone and takes the lock
# over at once, instead of failing for the next hour.
use strict;
use warnings;

use Test::More;

use SluiceTest;

my ($migrate_user) = conf_read() =~ /^[ \t]*migrate_user[ \t]*=[ \t]*(\S+)/m;
ok($migrate_user, 'the stack migrates as its own account');
my $server = mysql("SELECT CONCAT(\@\@hostname, ':', \@\@port, ':', UNIX_TIMESTAMP() - VARIABLE_VALUE) "
		   . "FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'");
my ($host_port, $boot) = $server =~ /^(.*):(\d+)$/;
ok($boot, "this server, booted at $boot");

sub migrate { run_cmd([ env('SLUICE_BIN'), 'migrate', '-c', env('SLUICE_CONF') ]) }

sub left_by {
	my ($holder) = @_;
	mysql('DELETE FROM schema_migrations_lock');
	mysql("INSERT INTO schema_migrations_lock (id, holder, taken_at) "
	      . "VALUES (1, '$holder', UTC_TIMESTAMP(3))");
}

# A session of this server whose connection is gone: the connection id
# is far beyond any the server has given out.
left_by("$migrate_user\@localhost/$host_port:$boot/4000000000 killed.example:4242");
my $r = migrate();
is($r->{exit}, 0, 'a lock left by a gone session is taken over') or diag $r->{err};
like($r->{err} . $r->{out}, qr/took over the migration lock of a session that is gone/,
     'and the migrate says so');
is(mysql('SELECT COUNT(*) FROM schema_migrations_lock'), 0, 'and releases it when done');

# A session of this server before its last restart.
my $before = $boot - 600;
left_by("$migrate_user\@localhost/$host_port:$before/7 restarted.example:4242");
$r = migrate();
is($r->{exit}, 0, 'a lock left before the server restarted is taken over') or diag $r->{err};
is(mysql('SELECT COUNT(*) FROM schema_migrations_lock'), 0, 'released');

# A live session of this server, of the migrate account, holds it: the
# migrate waits, and it gets the lock once that session lets go.
my ($pw_file) = conf_read() =~ /^[ \t]*migrate_password_file[ \t]*=[ \t]*(\S+)/m;
open my $pw_fh, '<', $pw_file or die "$pw_file: $!";
chomp(my $pw = <$pw_fh>);
close $pw_fh;
my $pid = fork // die "fork: $!";
if (!$pid) {
	# One session: it writes the row naming itself, holds it 3 s, deletes it.
	$ENV{MYSQL_PWD} = $pw;
	exec('sh', '-c', 'mariadb --no-defaults --socket="$2" -u"$3" -N -B -e "$1" sluice', 'sh',
	     "DELETE FROM schema_migrations_lock; INSERT INTO schema_migrations_lock (id, holder, "
	     . "taken_at) SELECT 1, CONCAT(CURRENT_USER(), '/$host_port:$boot/', CONNECTION_ID(), "
	     . "' live.example:1'), UTC_TIMESTAMP(3); SELECT SLEEP(3); "
	     . "DELETE FROM schema_migrations_lock", env('SLUICE_DB_SOCKET'), $migrate_user)
		or exit 127;
}
ok(wait_until(10, sub { mysql('SELECT COUNT(*) FROM schema_migrations_lock '
			      . "WHERE holder LIKE '%live.example:1'") == 1 }, 0.05),
   'a live session holds the lock');
$r = migrate();
is($r->{exit}, 0, 'the migrate waited for it, then ran') or diag $r->{err};
unlike($r->{err} . $r->{out}, qr/took over/, 'without taking over a live session\'s lock');
waitpid($pid, 0);
is($?, 0, 'the holding session ended normally');
is(mysql('SELECT COUNT(*) FROM schema_migrations_lock'), 0, 'nothing left');

done_testing();
