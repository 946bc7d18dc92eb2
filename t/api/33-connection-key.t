#!/usr/bin/perl
# The connection password key (connection_key_file): the dev stack's file is
# 64 hex characters readable by its owner only; a reload with a key file
# others can read, or with a malformed one, is refused without naming the key,
# and the running workers keep serving connections.

use strict;
use warnings;

use Test::More;

use SluiceTest;

my $token = env('SLUICE_DEMO_TOKEN');
my ($keyfile) = conf_read() =~ /^[ \t]*connection_key_file[ \t]*=[ \t]*(\S+)[ \t]*$/m;
ok(defined $keyfile && -f $keyfile, 'the config names an existing connection_key_file')
	or BAIL_OUT('no connection_key_file in ' . env('SLUICE_CONF'));

open my $fh, '<:raw', $keyfile or die "$keyfile: $!";
my $key = do { local $/; <$fh> };
close $fh;
my $mode = (stat $keyfile)[2] & 07777;

# Put the file back however the test ends.
END {
	if (defined $key) {
		local ($?, $@);
		if (open my $w, '>:raw', $keyfile) {
			print {$w} $key;
			close $w;
		}
		chmod $mode, $keyfile;
	}
}

like($key, qr/^[0-9a-f]{64}\n?$/, 'the key file holds 64 hex characters');
is(sprintf('%04o', $mode), '0600', 'mode 0600');
(my $hex = $key) =~ s/\s+//g;

my $master = master_pid();
my @workers = worker_pids($master);

sub refused_reload {
	my ($label, $want) = @_;
	my $offset = serve_log_offset();
	ok(kill('HUP', $master), "$label: HUP the master");
	my @err;
	ok(wait_until(15, sub {
		@err = grep { /\blevel=error\b/ && /reload refused/ } serve_log_since($offset);
	}), "$label: the reload is refused") or diag serve_log_since($offset);
	like("@err", $want, "$label: the log says why");
	unlike(serve_log_since($offset), qr/\Q$hex\E/i, "$label: the key is not logged");
	is_deeply([ worker_pids($master) ], \@workers, "$label: the old workers keep serving");
	my $res = http(POST => '/platform/connections', { token => $token, json => {
		name => "key-test-$label-$$", plugin => 'mariadb', host => 'h', port => 3306,
		database => 'd', user => 'u', password => 'p' } });
	is($res->{status}, 201, "$label: connections can still be created") or diag describe($res);
}

chmod 0644, $keyfile;
refused_reload('world-readable', qr/connection_key_file '\Q$keyfile\E' is accessible to others \(mode 0644\)/);
chmod 0600, $keyfile;

open my $w, '>:raw', $keyfile or die "$keyfile: $!";
print {$w} substr($hex, 0, 63), "\n";
close $w;
refused_reload('63 hex characters', qr/must hold exactly 64 hex characters/);

open $w, '>:raw', $keyfile or die "$keyfile: $!";
print {$w} $key;
close $w;
my $offset = serve_log_offset();
ok(kill('HUP', $master), 'HUP with the key restored');
my @new = wait_workers($master, scalar @workers, 30, \@workers);
is(scalar @new, scalar @workers, 'the reload replaces the workers');
unlike(serve_log_since($offset), qr/reload refused/, 'and is not refused');

done_testing();
