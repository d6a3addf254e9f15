#!/bin/sh
# A Redis server of the swarm stack (deploy/stack.yml): redis-a or redis-b, named by $REDIS_NAME.
#
# It starts as the Sentinels' current master says: the master itself if it is the one they name,
# otherwise that master's replica. Only when no Sentinel answers (the stack's first start) does it
# take its role from the stack file ($FIRST_ROLE: empty for the master, `--replicaof redis-a 6379`
# for the replica). So a server that comes back after a failover joins the new master instead of
# serving its older data as a second master, and a restart of the whole stack keeps the newest data.
# It is known by name (replica-announce-ip), so the Sentinels follow it to a new address.
set -eu
password=$(cat /run/secrets/evalfarm_redis_password)

master=""
for sentinel in sentinel-1 sentinel-2 sentinel-3; do
    master=$(REDISCLI_AUTH="$password" timeout 5 redis-cli -h "$sentinel" -p 26379 --raw \
        sentinel get-master-addr-by-name evalfarm 2>/dev/null | head -n 1) || master=""
    [ -n "$master" ] && break
done
if [ -z "$master" ]; then
    role=${FIRST_ROLE:-}
    echo "redis.sh: no Sentinel answered; starting as the stack file says: ${role:-master}"
elif [ "$master" = "$REDIS_NAME" ]; then
    role=""
    echo "redis.sh: the Sentinels name this server the master"
else
    role="--replicaof $master 6379"
    echo "redis.sh: the Sentinels name $master the master; starting as its replica"
fi

# As the official image's entry point does: the server runs as the image's redis user, if it has one.
run_as=""
if id redis >/dev/null 2>&1; then
    chown -R redis:redis /data
    run_as="setpriv --reuid=redis --regid=redis --init-groups"
fi
# shellcheck disable=SC2086 # $run_as and $role are words on purpose
exec $run_as redis-server /usr/local/etc/redis/redis.conf --requirepass "$password" \
    --masterauth "$password" --replica-announce-ip "$REDIS_NAME" $role
