#!/bin/sh
# A Sentinel of the swarm stack (deploy/stack.yml), named by $SENTINEL_NAME.
#
# Sentinel keeps what it learns (the current master, the replicas, the other Sentinels, the epoch)
# in its config file, in the service's volume: the file is made once (atomically, so a kill halfway
# leaves none), and at every start the lines that come from the stack (the passwords, the timing)
# are set again, so a rotated password or a new down-after time reaches a Sentinel that has state.
# The Sentinels require the farm's Redis password too: whoever could reconfigure them could point
# every client, and its password, at a server of their own.
set -eu
password=$(cat /run/secrets/evalfarm_redis_password)
config=/data/sentinel.conf

if [ ! -f "$config" ]; then
    cat > "$config.new" <<CONF
port 26379
dir /data
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip $SENTINEL_NAME
sentinel monitor evalfarm redis-a 6379 2
sentinel failover-timeout evalfarm 60000
sentinel parallel-syncs evalfarm 1
CONF
    mv "$config.new" "$config"
fi
# The stack's settings, replacing whatever the file held.
sed -i -e '/^requirepass /d' -e '/^sentinel sentinel-pass /d' -e '/^sentinel auth-pass evalfarm /d' \
    -e '/^sentinel down-after-milliseconds evalfarm /d' "$config"
cat >> "$config" <<CONF
requirepass $password
sentinel sentinel-pass $password
sentinel auth-pass evalfarm $password
sentinel down-after-milliseconds evalfarm ${DOWN_AFTER_MS:-5000}
CONF

run_as=""
if id redis >/dev/null 2>&1; then
    chown -R redis:redis /data
    run_as="setpriv --reuid=redis --regid=redis --init-groups"
fi
# shellcheck disable=SC2086 # $run_as is words on purpose
exec $run_as redis-server "$config" --sentinel
