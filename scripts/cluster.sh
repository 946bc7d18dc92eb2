# scripts/cluster.sh - sourced by scripts/dev: sluice on a three-node MariaDB
# Galera cluster with two sluice hosts, on loopback, under var/cluster/.
#
#   scripts/dev cluster up | down | status | env | test
#   scripts/dev cluster node-stop N | node-start N | node-kill N     (N = 1, 2, 3)
#   scripts/dev cluster serve-stop H | serve-start H | serve-kill H  (H = a, b)
#   scripts/dev cluster work-stop H | work-start H | work-kill H
#
# Pieces (P = SLUICE_PORT, default 38443; docs/operations.md, "A local cluster"):
#   node1..3   mariadbd with Debian's galera-4; node N: SQL port P+10N, group
#              communication P+10N+1, IST P+10N+2, SST (rsync) P+10N+3, its
#              own my.cnf, datadir, socket, pid file and log
#   host a, b  sluice serve + sluice work (host_name sluice-a, sluice-b), a on
#              node1, b on node2; one jwt secret, connection key, account
#              passwords and storage area (var/cluster/storage)
#   nginx      https://127.0.0.1:P balances both hosts (upstream blocks);
#              P+3 reaches only host a, P+4 only host b
#   source     the jdbc source MariaDB on P+1 (no PostgreSQL)
#
# SLUICE_CLUSTER_TESTS: the test files `test` runs (default t/cluster/*.t).

CLUSTER_NODES=(1 2 3)
CLUSTER_HOSTS=(a b)
GALERA_PROVIDER=/usr/lib/galera/libgalera_smm.so

cluster_paths() {
	set_instance cluster
	set_build
	CL_URL=$URL
	NGINX_FASTCGI='$sluice_fastcgi'
	NGINX_WAITER='$sluice_waiter'
	NGINX_HTTP_EXTRA="include \"$VAR/nginx/upstreams.conf\";"
	NGINX_LISTEN_EXTRA="listen 127.0.0.1:$((PORT + 3)) ssl; listen 127.0.0.1:$((PORT + 4)) ssl;"
	node_use 1
	host_use a
}

# --- nodes -------------------------------------------------------------------------
# NODE_* for node $1; DB_SOCK follows it (db_setup, the hosts' db_socket).
node_use() {
	NODE=$1
	[[ $NODE =~ ^[123]$ ]] || die "no node '$NODE' (1, 2 or 3)"
	NODE_DIR=$VAR/node$NODE
	NODE_DATA=$NODE_DIR/data
	NODE_CNF=$NODE_DIR/my.cnf
	NODE_SOCK=$NODE_DIR/mysqld.sock
	NODE_PID=$NODE_DIR/mysqld.pid
	NODE_LOG=$NODE_DIR/mysqld.log
	NODE_PORT=$((PORT + 10 * NODE))
	DB_SOCK=$NODE_SOCK
	DB_PID=$NODE_PID
	DB_LOG=$NODE_LOG
	DB_MATCH="--defaults-file=$NODE_CNF( |\$)"
}

node_sql() { mariadb --no-defaults --socket="$NODE_SOCK" -uroot -N -B --connect-timeout=5 "$@"; }

node_status_var() {
	node_sql -e "SHOW GLOBAL STATUS LIKE '$1'" 2>/dev/null | cut -f2 || true
}

node_cnf_write() {
	local gcomm='' n
	for n in "${CLUSTER_NODES[@]}"; do
		gcomm+=${gcomm:+,}127.0.0.1:$((PORT + 10 * n + 1))
	done
	mkdir -p "$NODE_DIR/tmp"
	# mariadbd reads this with --defaults-file, and so do the SST scripts
	# (my_print_defaults), which is why there is a file at all.
	cat >"$NODE_CNF.tmp" <<-EOF
		# node$NODE of the local sluice cluster, written by scripts/cluster.sh.
		[mysqld]
		user = mysql
		datadir = $NODE_DATA
		socket = $NODE_SOCK
		pid-file = $NODE_PID
		log-error = $NODE_LOG
		tmpdir = $NODE_DIR/tmp
		bind-address = 127.0.0.1
		port = $NODE_PORT
		skip-name-resolve
		innodb_buffer_pool_size = 64M
		innodb_flush_log_at_trx_commit = 2
		character-set-server = utf8mb4
		collation-server = utf8mb4_unicode_ci
		# Galera: row events, interleaved AUTO_INCREMENT locks.
		binlog_format = ROW
		default_storage_engine = InnoDB
		innodb_autoinc_lock_mode = 2
		wsrep_on = ON
		wsrep_provider = $GALERA_PROVIDER
		# Named after this checkout: a node of another checkout's cluster
		# that reaches these ports is refused, never joined (and SST-wiped).
		wsrep_cluster_name = sluice-$(printf '%s' "$VAR" | sha256sum | cut -c1-16)
		wsrep_cluster_address = gcomm://$gcomm
		wsrep_node_name = node$NODE
		wsrep_node_address = 127.0.0.1
		# gcache: enough for IST after an outage of minutes under the
		# bench's load, rather than a full SST.
		wsrep_provider_options = "gmcast.listen_addr=tcp://127.0.0.1:$((NODE_PORT + 1));ist.recv_addr=127.0.0.1:$((NODE_PORT + 2));gcache.size=256M"
		wsrep_sst_method = rsync
		wsrep_sst_receive_address = 127.0.0.1:$((NODE_PORT + 3))
		# Reads wait until the node applied every write committed before
		# them: a POST through one host and a GET through the other agree.
		wsrep_sync_wait = 1
	EOF
	mv -f "$NODE_CNF.tmp" "$NODE_CNF"
}

# grastate.dat's field $1 for this node ("" without the file).
node_grastate() {
	sed -n "s/^$1:[[:space:]]*//p" "$NODE_DATA/grastate.dat" 2>/dev/null | head -n1
}

# The node's last committed position, uuid:seqno: grastate.dat's after a
# clean stop; after a crash (grastate says -1) what --wsrep-recover finds in
# InnoDB, as mysqld_safe does.  Empty without data.
node_position() {
	local seqno
	[[ -d $NODE_DATA/mysql ]] || return 0
	seqno=$(node_grastate seqno)
	if [[ -n $seqno && $seqno != -1 ]]; then
		printf '%s:%s\n' "$(node_grastate uuid)" "$seqno"
		return 0
	fi
	node_own
	mariadbd --defaults-file="$NODE_CNF" --wsrep-recover --log-error="$NODE_DIR/recover.log" \
		>/dev/null 2>&1 || return 0
	sed -n 's/.*WSREP: Recovered position: \([0-9a-f-]*:-\{0,1\}[0-9]*\).*/\1/p' \
		"$NODE_DIR/recover.log" | tail -n1
}

# The node runs as mysql, not root: the rsync daemon of a joiner's SST
# would otherwise run as nobody (rsync's default for root) and could not
# write the data directory.  So the node's files are mysql's, and all of
# them (socket, pid file, log) live in its directory.
node_own() {
	runuser -u mysql -- test -x "$VAR" 2>/dev/null ||
		die "the mysql user cannot reach $VAR; move the checkout where it can"
	chown -R mysql:mysql "$NODE_DIR"
	chmod 700 "$NODE_DIR"
}

node_running() { live_pid "$NODE_PID" >/dev/null; }

any_node_running() {
	local n
	for n in "${CLUSTER_NODES[@]}"; do
		live_pid "$VAR/node$n/mysqld.pid" >/dev/null && return 0
	done
	return 1
}

# Start node $NODE: it joins the running nodes, or, when none runs, founds
# the cluster (--wsrep-new-cluster); returns once it is Synced.
node_start() {
	node_running && return 0
	check_socket_paths
	node_cnf_write
	local boot=() pos
	if ! any_node_running; then
		boot=(--wsrep-new-cluster)
		if [[ ! -d $NODE_DATA/mysql ]]; then
			note "initialising node$NODE's data directory"
			rm -rf "$NODE_DATA"
			mkdir -p "$NODE_DATA"
			mariadb-install-db --no-defaults --user=mysql --datadir="$NODE_DATA" \
				--auth-root-authentication-method=socket --skip-test-db \
				>"$NODE_DIR/install.log" 2>&1 || {
				cat "$NODE_DIR/install.log" >&2
				die "mariadb-install-db failed for node$NODE"
			}
		elif [[ $(node_grastate safe_to_bootstrap) != 1 ]]; then
			# No clean last node: a crash of all.  This node was picked as
			# the one with the highest seqno (cluster_nodes_start).
			note "node$NODE founds the cluster again after a crash (safe_to_bootstrap set)"
			sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$NODE_DATA/grastate.dat"
		fi
	else
		# A joiner takes state from a donor (IST, or SST by rsync into an
		# empty directory).
		mkdir -p "$NODE_DATA"
	fi
	# After a crash: start from the recovered position, so that a joiner
	# gets the missing writes by IST rather than a whole SST.
	if [[ -d $NODE_DATA/mysql && $(node_grastate seqno) == -1 ]]; then
		pos=$(node_position)
		[[ -n $pos ]] && boot+=(--wsrep-start-position="$pos")
	fi
	local p
	for p in "$NODE_PORT" $((NODE_PORT + 1)) $((NODE_PORT + 2)) $((NODE_PORT + 3)); do
		[[ -z $(ss -Hltn "sport = :$p" 2>/dev/null) ]] ||
			die "node$NODE's port $p is in use (another cluster on SLUICE_PORT=$PORT? set another)"
	done
	touch "$NODE_LOG"
	node_own
	rm -f "$NODE_SOCK" "$NODE_PID"
	spawn "$NODE_LOG" mariadbd --defaults-file="$NODE_CNF" "${boot[@]}"
	local pid=$! i state=
	# A node-kill later is no news for this shell's job table.
	disown "$pid"
	for ((i = 0; i < 1800; i++)); do
		state=$(node_status_var wsrep_local_state_comment)
		[[ $state == Synced ]] && return 0
		alive "$pid" || break
		sleep 0.1
	done
	tail -n 40 "$NODE_LOG" >&2 || true
	die "node$NODE did not reach Synced (state '${state:-no answer}'; log: $NODE_LOG)"
}

node_stop() {
	db_stop
}

node_kill() {
	local pid
	pid=$(live_pid "$NODE_PID") || pid=$(pids_matching "$DB_MATCH" | head -n1)
	[[ -n $pid ]] || return 0
	kill -KILL "$pid" 2>/dev/null || true
	wait_gone "$pid" 10 || true
}

# All three, the founder first: after a clean `down` the node whose
# grastate.dat says safe_to_bootstrap (the last one stopped), after a crash
# of all the one with the highest recovered seqno (ties: the lowest number).
cluster_nodes_start() {
	local n first=1 best=-2 s
	if ! any_node_running && compgen -G "$VAR/node[123]/data/mysql" >/dev/null; then
		first=
		for n in "${CLUSTER_NODES[@]}"; do
			node_use "$n"
			node_cnf_write
			[[ $(node_grastate safe_to_bootstrap) == 1 ]] && { first=$n && break; }
		done
		if [[ -z $first ]]; then
			for n in "${CLUSTER_NODES[@]}"; do
				node_use "$n"
				[[ -d $NODE_DATA/mysql ]] || continue
				s=$(node_position)
				s=${s##*:}
				s=${s:--1}
				note "node$n: last seqno $s"
				((s > best)) && { best=$s && first=$n; }
			done
		fi
		first=${first:-1}
	fi
	node_use "$first"
	node_start
	for n in "${CLUSTER_NODES[@]}"; do
		node_use "$n"
		node_start
	done
}

# The last one stopped writes safe_to_bootstrap: 1, so node1 founds the
# cluster again at the next `up`.
cluster_nodes_stop() {
	local n
	for n in 3 2 1; do
		node_use "$n"
		node_stop
	done
}

# --- hosts -------------------------------------------------------------------------
# Host $1's paths; CONF, SOCK, the pid files and URL follow it (serve_start,
# work_start and the rest of scripts/dev work on the current host).
host_use() {
	HOST=$1
	case $HOST in
	a) HOST_NODE=1 HOST_PORT=$((PORT + 3)) ;;
	b) HOST_NODE=2 HOST_PORT=$((PORT + 4)) ;;
	*) die "no host '$HOST' (a or b)" ;;
	esac
	HOST_DIR=$VAR/host-$HOST
	CONF=$HOST_DIR/sluice.conf
	SOCK=$VAR/run/sluice-$HOST.sock
	WAIT_SOCK=$SOCK.wait
	SERVE_PID=$VAR/run/serve-$HOST.pid
	SERVE_LOG=$VAR/log/serve-$HOST.log
	WORK_PID=$VAR/run/work-$HOST.pid
	WORK_LOG=$VAR/log/work-$HOST.log
	URL=https://127.0.0.1:$HOST_PORT
}

# The host's sluice.conf: the shared one (var/cluster/sluice.conf, written
# by write_conf) with the host's socket, pid file, node and name.  Rewritten
# only when it changes, so that restart_if_stale restarts only then.
host_conf_write() {
	local base=$VAR/sluice.conf
	mkdir -p "$HOST_DIR"
	{
		grep -v -E '^[[:space:]]*(listen|pid_file|db_socket|host_name)[[:space:]]*=' "$base"
		printf 'listen = %s\n' "$SOCK"
		printf 'pid_file = %s\n' "$SERVE_PID"
		printf 'db_socket = %s\n' "$VAR/node$HOST_NODE/mysqld.sock"
		printf 'host_name = sluice-%s\n' "$HOST"
	} | write_secret "$CONF.new"
	if cmp -s "$CONF.new" "$CONF"; then
		rm -f "$CONF.new"
	else
		mv -f "$CONF.new" "$CONF"
	fi
}

host_start() {
	host_conf_write
	restart_if_stale "$SERVE_PID" serve_stop
	restart_if_stale "$WORK_PID" work_stop
	serve_start
	work_start
}

host_stop() {
	work_stop
	serve_stop
}

# kill -9 of the current host's serve master (its workers and waiter go
# with its process group) or of its sluice work.
serve_kill() {
	local pid
	pid=$(live_pid "$SERVE_PID") || return 0
	kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
	wait_gone "$pid" 10 || true
}

work_kill() {
	local pid
	pid=$(live_pid "$WORK_PID") || return 0
	kill -KILL "$pid" 2>/dev/null || true
	wait_gone "$pid" 10 || true
}

# nginx's upstream blocks: the FastCGI and waiter sockets of both hosts
# behind P, one host each behind P+3 and P+4 (chosen by $server_port).
cluster_upstreams_write() {
	local h
	{
		printf '# The local cluster'"'"'s hosts, written by scripts/cluster.sh.\n'
		# A host whose database node is down or outside the Primary
		# component answers 503 (500 where the spec says so, as the
		# pipelines listing does): nginx asks the other host instead, for
		# the requests it may repeat (it never repeats a POST or PATCH once
		# sent), and leaves the host alone for fail_timeout (10 s).
		printf 'fastcgi_next_upstream error timeout http_503 http_500;\n'
		printf 'upstream sluice_fastcgi {\n'
		for h in "${CLUSTER_HOSTS[@]}"; do
			printf '\tserver unix:%s;\n' "$VAR/run/sluice-$h.sock"
		done
		printf '\tkeepalive 32;\n'
		printf '}\nupstream sluice_waiter {\n'
		for h in "${CLUSTER_HOSTS[@]}"; do
			printf '\tserver unix:%s;\n' "$VAR/run/sluice-$h.sock.wait"
		done
		printf '}\n'
		for h in "${CLUSTER_HOSTS[@]}"; do
			printf 'upstream sluice_fastcgi_%s { server unix:%s; keepalive 32; }\n' "$h" "$VAR/run/sluice-$h.sock"
			printf 'upstream sluice_waiter_%s { server unix:%s; }\n' "$h" "$VAR/run/sluice-$h.sock.wait"
		done
		printf 'map $server_port $sluice_fastcgi {\n\tdefault sluice_fastcgi;\n'
		printf '\t%s sluice_fastcgi_a;\n\t%s sluice_fastcgi_b;\n}\n' $((PORT + 3)) $((PORT + 4))
		printf 'map $server_port $sluice_waiter {\n\tdefault sluice_waiter;\n'
		printf '\t%s sluice_waiter_a;\n\t%s sluice_waiter_b;\n}\n' $((PORT + 3)) $((PORT + 4))
	} >"$VAR/nginx/upstreams.conf"
}

# --- commands --------------------------------------------------------------------
cluster_up() {
	note "building ($BUILD)"
	cmd_build
	note "starting the cluster ($CL_URL, $VAR)"
	mkdir -p "$VAR"/{run,log,storage,tls,nginx}
	chmod 755 "$VAR" "$VAR"/{run,log,nginx,tls}
	chgrp www-data "$VAR/storage" 2>/dev/null && chmod 2775 "$VAR/storage"
	[[ -x $GALERA_PROVIDER ]] || [[ -f $GALERA_PROVIDER ]] ||
		die "no Galera provider at $GALERA_PROVIDER (scripts/dev deps installs galera-4)"

	cluster_nodes_start
	source_db_start

	# Config, secrets, schema and accounts once, through node1: Galera
	# replicates the DDL and the users.
	node_use 1
	host_use a
	CONF=$VAR/sluice.conf
	write_conf
	write_jwt_secret
	write_connection_key
	write_account_secrets
	db_setup "$(conf_get db_password)"
	host_conf_write
	"$BIN" migrate -c "$CONF" || die "sluice migrate failed"
	db_loader_grants

	make_cert
	cluster_upstreams_write
	URL=$CL_URL
	nginx_start
	local h
	for h in "${CLUSTER_HOSTS[@]}"; do
		host_use "$h"
		host_start
	done
	host_use a
	demo_data

	cat <<-EOF

		sluice cluster is up: $CL_URL (both hosts), https://127.0.0.1:$((PORT + 3)) (a), https://127.0.0.1:$((PORT + 4)) (b)
		  eval "\$(scripts/dev cluster env)"; scripts/dev cluster status
		logs in $VAR/log; stop with scripts/dev cluster down
	EOF
}

cluster_down() {
	local h
	for h in "${CLUSTER_HOSTS[@]}"; do
		host_use "$h"
		host_stop
	done
	nginx_stop
	source_db_stop
	cluster_nodes_stop
}

# "  name     pid N" or "  name     stopped", from a pid file.
piece_line() {
	local pid
	if pid=$(live_pid "$2"); then
		printf '  %-8s pid %s\n' "$1" "$pid"
	else
		printf '  %-8s stopped\n' "$1"
	fi
}

cluster_status() {
	local n h pid
	printf 'cluster %s (%s)\n' "$VAR" "$CL_URL"
	for n in "${CLUSTER_NODES[@]}"; do
		node_use "$n"
		if pid=$(live_pid "$NODE_PID"); then
			printf '  node%s    pid %-8s size %s, %s, %s\n' "$n" "$pid" \
				"$(node_status_var wsrep_cluster_size)" \
				"$(node_status_var wsrep_local_state_comment)" \
				"$(node_status_var wsrep_cluster_status)"
		else
			printf '  node%s    stopped\n' "$n"
		fi
	done
	for h in "${CLUSTER_HOSTS[@]}"; do
		host_use "$h"
		piece_line "serve-$h" "$SERVE_PID"
		piece_line "work-$h" "$WORK_PID"
		printf '  health-%s %s (%s)\n' "$h" "$(http_status "$URL/health")" "$URL"
	done
	piece_line nginx "$NGINX_PID"
	piece_line source "$SRC_PID"
}

cluster_env() {
	local -a kv=(SLUICE_CLUSTER_URL "$CL_URL" SLUICE_CLUSTER_VAR "$VAR") n h
	for n in "${CLUSTER_NODES[@]}"; do
		node_use "$n"
		kv+=(
			"SLUICE_CLUSTER_NODE${n}_SOCKET" "$NODE_SOCK"
			"SLUICE_CLUSTER_NODE${n}_PID" "$NODE_PID"
			"SLUICE_CLUSTER_NODE${n}_LOG" "$NODE_LOG"
			"SLUICE_CLUSTER_NODE${n}_CNF" "$NODE_CNF"
			"SLUICE_CLUSTER_NODE${n}_MYSQL" "mariadb --no-defaults --socket=$(shq "$NODE_SOCK") -uroot sluice"
		)
	done
	for h in "${CLUSTER_HOSTS[@]}"; do
		host_use "$h"
		local H=${h^^}
		kv+=(
			"SLUICE_CLUSTER_HOST_${H}_URL" "$URL"
			"SLUICE_CLUSTER_HOST_${H}_NAME" "sluice-$h"
			"SLUICE_CLUSTER_HOST_${H}_NODE" "$HOST_NODE"
			"SLUICE_CLUSTER_HOST_${H}_CONF" "$CONF"
			"SLUICE_CLUSTER_HOST_${H}_SERVE_PID" "$SERVE_PID"
			"SLUICE_CLUSTER_HOST_${H}_WORK_PID" "$WORK_PID"
			"SLUICE_CLUSTER_HOST_${H}_SERVE_LOG" "$SERVE_LOG"
			"SLUICE_CLUSTER_HOST_${H}_WORK_LOG" "$WORK_LOG"
		)
	done
	# The plain SLUICE_* ones: host a on node1.
	node_use 1
	host_use a
	env_print "${kv[@]}"
}

cluster_test() {
	local started=0 rc=0
	if ! live_pid "$NGINX_PID" >/dev/null; then
		started=1
		on_exit "cmd_cluster down"
		cluster_up
	fi
	eval "$(cluster_env)"
	note "prove ${SLUICE_CLUSTER_TESTS:-t/cluster/*.t} ($CL_URL)"
	# shellcheck disable=SC2086 # a list of globs, as SLUICE_API_TESTS is
	(cd "$ROOT" && prove -I t/lib ${VERBOSE:+-v} ${SLUICE_CLUSTER_TESTS:-t/cluster/*.t}) || rc=$?
	if ((started)); then
		cluster_down
	fi
	if [[ ${SLUICE_SANITIZE:-0} == 1 ]]; then
		sanitizer_reports || { ((rc != 0)) || rc=1; }
	fi
	return "$rc"
}

cmd_cluster() {
	local sub=${1:-} arg=${2:-}
	need_root cluster "$@"
	cluster_paths
	case $sub in
	up) cmd_deps && cluster_up ;;
	down) cluster_down ;;
	status) cluster_status ;;
	env) cluster_env ;;
	test) cmd_deps && cluster_test ;;
	node-start | node-stop | node-kill)
		node_use "$arg"
		"node_${sub#node-}"
		;;
	serve-start | serve-stop | serve-kill | work-start | work-stop | work-kill)
		host_use "$arg"
		"${sub/-/_}"
		;;
	*)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$ROOT/scripts/cluster.sh" >&2
		exit 2
		;;
	esac
}
