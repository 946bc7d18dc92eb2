package TablesFixture;

# What the storage explorer table tests (t/api/55-59) share: customers and
# their tokens, datasets seeded straight into the database and the
# customer's storage area, tables, links, and waiting for a link's load.

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);
use File::Path qw(make_path);
use File::Basename qw(dirname);
use JSON::PP ();
use Test::More ();

use SluiceTest;

our @EXPORT = qw(
	customer_with_token st storage_root seed_dataset sql_quote
	create_table link_dataset wait_link wh_query wh_count uuid_re tag
	true false fixture_bytes columns_of table_entry work_unsettled wait_settled
);

sub true () { JSON::PP::true }
sub false () { JSON::PP::false }

my $TAG = "$$" . int(rand(1e6));
sub tag { $TAG }

sub uuid_re { qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/ }

sub sql_quote {
	my ($s) = @_;
	return 'NULL' unless defined $s;
	$s =~ s/\\/\\\\/g;
	$s =~ s/'/''/g;
	return "'$s'";
}

# customer_with_token($name, $permissions) -> ($customer_id, $token): the
# customer exists (sluice customer add) and the token is its.
sub customer_with_token {
	my ($name, $perms) = @_;
	my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', $name, '--if-missing',
			  '-c', env('SLUICE_CONF') ]);
	croak "sluice customer add $name: $r->{err}" if $r->{exit};
	(my $id = $r->{out}) =~ s/\s+\z//;
	my $tok = token(customer => $name, sub => "$name\@example.com",
			permissions => $perms
			    // 'STORAGE_EXPLORER.READ,STORAGE_EXPLORER.WRITE');
	return ($id, $tok);
}

# st($method, $path, $token, $json_or_undef, %opts): a JWT call.
sub st {
	my ($method, $path, $token, $json, %o) = @_;
	my %opts = (token => $token, %o);
	$opts{json} = $json if defined $json;
	return http($method, $path, \%opts);
}

sub storage_root {
	my ($root) = conf_read() =~ /^\s*storage_root\s*=\s*(.+?)\s*$/m
		or croak 'no storage_root in the config';
	return $root;
}

# seed_dataset($customer_id, file_path => 'a/b.csv', content => '...',
#              columns => [[name, type, nullable, precision, scale], ...],
#              status => 'ready', format => 'csv', rows => N,
#              parsing_options => '{...}')
# A dataset as an inferred upload leaves it: the file in the customer's
# storage area, the row with its Schema object.  Returns the dataset id.
sub seed_dataset {
	my ($cid, %o) = @_;
	my $path = $o{file_path} // "seed/$TAG-" . int(rand(1e9)) . '.csv';
	my $full = storage_root() . "/customers/$cid/$path";
	if (defined $o{content}) {
		make_path(dirname($full));
		open my $fh, '>:raw', $full or croak "$full: $!";
		print {$fh} $o{content};
		close $fh or croak "$full: $!";
	}
	(my $name = $path) =~ s{.*/}{};
	my $format = $o{format} // ($name =~ /\.(\w+)$/ ? lc $1 : 'csv');
	my $schema;
	if ($o{columns}) {
		my $pos = 0;
		my @cols = map {
			my ($n, $t, $null, $p, $s) = @$_;
			my %c = (name => $n, inferred_type => $t,
				 nullable => $null ? JSON::PP::true : JSON::PP::false,
				 position => $pos++);
			if ($t eq 'DECIMAL') {
				$c{precision} = $p + 0;
				$c{scale} = $s + 0;
			}
			\%c;
		} @{ $o{columns} };
		$schema = json_encode({ columns => \@cols, row_count => $o{rows} // 0,
					analyzed_rows => $o{rows} // 0 });
	}
	my $id = mysql('SELECT UUID()');
	my $size = defined $o{content} ? length $o{content} : 0;
	mysql('INSERT INTO datasets (id, customer_id, file_path, file_name, format, '
	    . 'size_bytes, status, schema_json, parsing_options, row_count, analyzed_rows) '
	    . 'VALUES (' . join(', ', map { sql_quote($_) } $id, $cid, $path, $name,
		$format, $size, $o{status} // 'ready', $schema, $o{parsing_options},
		$o{rows} // 0, $o{rows} // 0) . ')');
	return $id;
}

# create_table($token, $name, \@columns, %extra) -> the 201 body (croaks otherwise)
sub create_table {
	my ($token, $name, $cols, %extra) = @_;
	my $res = st(POST => '/storage-explorer/tables', $token,
		     { table_name => $name, columns => $cols, %extra });
	croak "create $name: " . describe($res) unless $res->{status} == 201;
	return $res->{json};
}

sub link_dataset {
	my ($token, $table_id, $dataset_id) = @_;
	return st(POST => "/storage-explorer/tables/$table_id/datasets/$dataset_id", $token);
}

# The link's entry of GET /storage-explorer/tables/{id} once its load ended
# (sync_status done or failed); undef on timeout.
sub wait_link {
	my ($token, $table_id, $link_id, $timeout) = @_;
	my $found;
	wait_until($timeout // 30, sub {
		my $res = st(GET => "/storage-explorer/tables/$table_id", $token);
		return 0 unless $res->{status} == 200;
		($found) = grep { $_->{link_id} eq $link_id } @{ $res->{json}{links} };
		$found && $found->{sync_status} =~ /^(done|failed)$/;
	}, 0.1) or return undef;
	return $found;
}

# Rows of a query on the warehouse (the service's own server in the test
# stack), each an array ref of strings ('NULL' for NULL).
sub wh_query {
	my ($sql) = @_;
	return mysql($sql);
}

# fixture_bytes($name): a file of t/fixtures/storage/binary, as bytes.
sub fixture_bytes {
	my ($name) = @_;
	my $f = env('SLUICE_ROOT') . "/t/fixtures/storage/binary/$name";
	open my $fh, '<:raw', $f or croak "$f: $!";
	local $/;
	return scalar <$fh>;
}

# columns_of($schema): a table's columns for an inferred Schema object, the
# same types, sized.
sub columns_of {
	my ($schema) = @_;
	return [ map {
		my $type = $_->{inferred_type};
		$type = "DECIMAL($_->{precision},$_->{scale})" if $type eq 'DECIMAL';
		{ name => $_->{name}, type => $type,
		  nullable => $_->{nullable} ? JSON::PP::true : JSON::PP::false };
	} @{ $schema->{columns} } ];
}

# The dataset's entry in GET /storage-explorer/tables/{id}/datasets.
sub table_entry {
	my ($token, $tid, $ds) = @_;
	my $res = st(GET => "/storage-explorer/tables/$tid/datasets", $token);
	return undef unless $res->{status} == 200;
	my ($e) = grep { $_->{dataset_id} eq $ds } @{ $res->{json}{datasets} };
	return $e;
}

# Queue rows of kind for ref that are not settled.
sub work_unsettled {
	my ($kind, $ref) = @_;
	return mysql("SELECT COUNT(*) FROM work_queue WHERE kind = '$kind' AND ref_id = '$ref' "
		   . "AND status IN ('queued', 'running')");
}

# Wait until nothing is left to do for the dataset and the table: its
# inference and the table's loads all settled (an inference queues its
# loads as it settles).  The entry read after that; undef on timeout.
sub wait_settled {
	my ($token, $tid, $ds) = @_;
	my $e;
	wait_until(60, sub {
		return 0 if work_unsettled('storage_infer', $ds)
			 || work_unsettled('storage_link_load', $tid);
		$e = table_entry($token, $tid, $ds);
		$e && $e->{sync_status} ne 'pending';
	}, 0.1) or return undef;
	return $e;
}

sub wh_count {
	my ($table) = @_;
	return scalar mysql("SELECT COUNT(*) FROM `$table->{warehouse_schema}`."
	    . "`$table->{warehouse_table}`");
}

1;
