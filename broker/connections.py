"""Redis clients for the farm's own keys (reply lists, liveness, audits, sessions, metrics), from the
farm's broker URL: a plain `redis://` or `rediss://` URL, or Redis Sentinel in kombu's form.

Sentinel: `sentinel://HOST1:26379;sentinel://HOST2:26379;sentinel://HOST3:26379` (a password and a
database on the first, `sentinel://:PASSWORD@HOST1:26379/0;...`, are the master's), with the
master's name in the `redis_master` setting (`EVALFARM_REDIS_MASTER`) or on the URL as Celery's and
kombu's users write it (`...;sentinel://HOST3:26379?master_name=NAME`: the settings take it off the
URL, which kombu would otherwise pass to its connection as an argument it does not take), and the
Sentinels' own
password, where they have one, in `redis_sentinel_password` (`EVALFARM_REDIS_SENTINEL_PASSWORD`).
TLS under Sentinel: the options a `rediss://` URL takes (`ssl_cert_reqs`, `ssl_ca_certs`,
`ssl_certfile`, `ssl_keyfile`) go on the first address too,
`sentinel://:PASSWORD@HOST1:26379/0?ssl_ca_certs=/ca.pem;sentinel://HOST2:26379;...`, and then
every connection speaks TLS: to the Sentinels and to the master they name, checked by the same CA
(Redis's own TLS deployment: `tls-port` on servers and Sentinels, `tls-replication yes`).
A client made here asks the Sentinels where the master is at each new connection, so it follows a
failover without a restart: a command on a connection to the old master fails (a connection error,
or READONLY on a demoted one) and is retried on a fresh connection to the new master. Celery's side
(the broker transport, the result backend) is configured for the same URL by `broker.app`.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalfarm.broker.settings import FarmSettings

SENTINEL_SCHEMES = ("sentinel",)
MASTER_NAME = "master_name"  # the query parameter of a Sentinel URL that names its master
# Every connection to Redis or a Sentinel: a dead peer is noticed (keepalive), a host that does not
# answer fails the connect in 5 s, and a reply that never comes fails the command in 30 s.
SOCKET_OPTIONS: dict[str, Any] = {"socket_keepalive": True, "socket_connect_timeout": 5, "socket_timeout": 30}


class ConnectionConfigError(ValueError):
    """A broker URL or master name no client can connect with."""


class MasterWatch:
    """Counts the times a client's new connections went to another server than the one before: a
    failover. redis-py retries a command that failed on a dead master on a connection to the new one,
    so the caller never sees the error; what the failover lost (the last writes, not yet replicated)
    it learns here, as a change of `generation`."""

    def __init__(self) -> None:
        self.generation = 0
        self._address: tuple[str, int] | None = None

    def saw(self, host: str, port: int) -> None:
        """A connection to `host:port` was made."""
        address = (str(host), int(port))
        if self._address is not None and address != self._address:
            self.generation += 1
        self._address = address


def decoded(value: Any) -> str:
    """A Redis reply (bytes, or text already) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def is_sentinel(url: str | None) -> bool:
    """Whether `url` names Redis Sentinels rather than a Redis server."""
    return bool(url) and str(url).split("://", 1)[0] in SENTINEL_SCHEMES


def sentinel_parts(url: str) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The Sentinels' addresses of a `sentinel://...;sentinel://...` URL, and the master's connection
    options it carries (password, username, database, TLS); ConnectionConfigError when malformed."""
    addresses: list[tuple[str, int]] = []
    options: dict[str, Any] = {}
    for index, chunk in enumerate(url.split(";")):
        parsed = urllib.parse.urlsplit(chunk.strip())
        if parsed.scheme not in SENTINEL_SCHEMES or not parsed.hostname:
            raise ConnectionConfigError(f"not a Sentinel address: {chunk!r} (expected sentinel://HOST:PORT)")
        names = [name for name, _ in urllib.parse.parse_qsl(parsed.query)]
        unknown = [name for name in names if name.startswith("ssl") and name not in TLS_OPTIONS]
        if unknown:  # it would reach some connections (kombu's) and not others
            raise ConnectionConfigError(
                f"unknown TLS option {unknown[0]!r} on a Sentinel URL: expected {', '.join(TLS_OPTIONS)}"
            )
        if index and any(name in TLS_OPTIONS for name in names):
            raise ConnectionConfigError(
                f"TLS options on {chunk!r}: they go on the first Sentinel address, and apply to all"
            )
        try:
            port = parsed.port or 26379
        except ValueError as error:
            raise ConnectionConfigError(f"not a Sentinel address: {chunk!r} ({error})") from None
        addresses.append((parsed.hostname, port))
        if parsed.password and "password" not in options:
            options["password"] = urllib.parse.unquote(parsed.password)
            if parsed.username:
                options["username"] = urllib.parse.unquote(parsed.username)
        database = parsed.path.strip("/")
        if database:
            if not database.isdigit():
                raise ConnectionConfigError(f"not a Sentinel URL: the database {database!r} is not a number")
            options.setdefault("db", int(database))
    return addresses, options | _ssl(url)


def sentinel_tls(url: str) -> dict[str, str]:
    """The TLS options of a Sentinel URL (on its first address), for every connection it leads to;
    empty when it speaks plain Redis."""
    first = urllib.parse.urlsplit(url.split(";", 1)[0].strip())
    return {name: value for name, value in urllib.parse.parse_qsl(first.query) if name in TLS_OPTIONS}


def sentinel_kwargs(url: str, farm: FarmSettings | None, socket_options: dict[str, Any]) -> dict[str, Any]:
    """How every client speaks to the Sentinels of `url` (redis-py's `sentinel_kwargs`, kombu's and
    Celery's too): the socket options of its other connections (given `sentinel_kwargs`, redis-py no
    longer copies them), the Sentinels' own password from the farm's settings, and TLS when the URL
    asks for it."""
    password = farm.redis_sentinel_password if farm is not None else None
    return socket_options | ({"password": password} if password else {}) | _ssl(url)


def _ssl(url: str) -> dict[str, Any]:
    """redis-py's connection options for the TLS a Sentinel URL asks for (none: plain)."""
    tls = sentinel_tls(url)
    return {"ssl": True, **tls} if tls else {}


def redis_client(
    url: str, farm: FarmSettings | None = None, watch: MasterWatch | None = None, **options: Any
) -> Any:
    """A redis-py client of the farm's Redis at `url` (`farm`: the settings that say how to reach a
    master through Sentinels; `watch`: told of every new connection's server; `options`: socket
    timeouts and the like)."""
    if watch is not None:

        def connected(connection: Any) -> None:
            connection.on_connect()
            watch.saw(connection.host, connection.port)

        options = {**options, "redis_connect_func": connected}
    if not is_sentinel(url):
        import redis

        return redis.Redis.from_url(url, **options)
    from redis.sentinel import Sentinel

    return _master_for(Sentinel, url, farm, options)


def async_redis_client(
    url: str, farm: FarmSettings | None = None, watch: MasterWatch | None = None, **options: Any
) -> Any:
    """An asyncio redis-py client of the farm's Redis at `url`."""
    if watch is not None:

        async def connected(connection: Any) -> None:
            await connection.on_connect()
            watch.saw(connection.host, connection.port)

        options = {**options, "redis_connect_func": connected}
    if not is_sentinel(url):
        import redis.asyncio

        return redis.asyncio.Redis.from_url(url, **options)
    from redis.asyncio.sentinel import Sentinel

    return _master_for(Sentinel, url, farm, options)


def _master_for(sentinel_class: Any, url: str, farm: FarmSettings | None, options: dict[str, Any]) -> Any:
    """A client of the master the Sentinels of `url` name (redis-py's sync or asyncio Sentinel): the
    master's options (password, database, TLS) from the URL, its name from the farm's settings."""
    master_name = farm.redis_master if farm is not None else None
    check_master(url, master_name)
    addresses, master = sentinel_parts(url)
    sockets = {name: value for name, value in options.items() if name.startswith("socket_")}
    sentinel = sentinel_class(
        addresses, sentinel_kwargs=sentinel_kwargs(url, farm, sockets), **options, **master
    )
    return sentinel.master_for(str(master_name))


def close(client: Any) -> None:
    """Close a client made here, and the connections to the Sentinels it asked."""
    client.close()
    for sentinel in _sentinels_of(client):
        sentinel.close()


async def aclose(client: Any) -> None:
    """Close an asyncio client made here, and its connections to the Sentinels."""
    await client.aclose()
    for sentinel in _sentinels_of(client):
        await sentinel.aclose()


def _sentinels_of(client: Any) -> list[Any]:
    manager = getattr(client.connection_pool, "sentinel_manager", None)
    return list(getattr(manager, "sentinels", ()))


# How a client checks a `rediss://` server's certificate (redis-py's and Celery's names for them).
CERT_REQS = {"required": "required", "cert_required": "required", "optional": "optional",
             "cert_optional": "optional", "none": "none", "cert_none": "none"}  # fmt: skip
# Query parameters of a `rediss://` URL that name files: the CA to trust, a client certificate.
TLS_FILES = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
TLS_OPTIONS = ("ssl_cert_reqs", *TLS_FILES)


def with_tls_defaults(url: str | None) -> str | None:
    """`url` with its TLS options checked: a `rediss://` URL, or a Sentinel URL with TLS options,
    checks the server's certificate unless it says otherwise (`ssl_cert_reqs=required` is added
    where absent: Celery demands the parameter, and none should mean a deliberate choice); an unknown
    value or a missing file is refused."""
    if not url:
        return url
    if is_sentinel(url):
        first, *others = url.split(";")
        return ";".join([_checked_tls(first), *others]) if sentinel_tls(url) else url
    if url.split("://", 1)[0] != "rediss":
        return url
    return _checked_tls(url)


def _checked_tls(url: str) -> str:
    """One URL's TLS options checked, with `ssl_cert_reqs` made explicit."""
    parsed = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parsed.query, keep_blank_values=True)
    options = dict(query)
    reqs = options.get("ssl_cert_reqs", "required")
    if reqs.lower() not in CERT_REQS:
        raise ConnectionConfigError(
            f"ssl_cert_reqs={reqs!r} in the broker URL: expected required, optional or none"
        )
    for name in TLS_FILES:
        if name in options and not os.path.isfile(options[name]):
            raise ConnectionConfigError(f"{name}={options[name]!r} in the broker URL: no such file")
    query = [(k, v) for k, v in query if k != "ssl_cert_reqs"] + [("ssl_cert_reqs", CERT_REQS[reqs.lower()])]
    return urllib.parse.urlunsplit(parsed._replace(query=urllib.parse.urlencode(query, safe="/:")))


def without_master_name(url: str | None) -> tuple[str | None, str | None]:
    """A Sentinel URL without its `master_name` query parameter (on any of its addresses), and the
    name; other URLs unchanged, with no name. Two different names are refused."""
    if not url or not is_sentinel(url):
        return url, None
    names: set[str] = set()
    chunks = []
    for chunk in url.split(";"):
        parsed = urllib.parse.urlsplit(chunk.strip())
        query = urllib.parse.parse_qsl(parsed.query, keep_blank_values=True)
        names.update(value for key, value in query if key == MASTER_NAME)
        kept = urllib.parse.urlencode([(k, v) for k, v in query if k != MASTER_NAME], safe="/:")
        chunks.append(urllib.parse.urlunsplit(parsed._replace(query=kept)))
    if len(names) > 1:
        raise ConnectionConfigError(f"a Sentinel URL names two masters: {', '.join(sorted(names))}")
    if names and not next(iter(names)):
        raise ConnectionConfigError("a Sentinel URL's master_name is empty")
    return ";".join(chunks), next(iter(names), None)


def _check_query(url: str) -> None:
    """Refuse a query parameter the farm would not apply on every connection: of a Redis URL, only
    the TLS options (redis-py, kombu and Celery read them alike); kombu passes any other one to its
    connection as an argument, which fails there or, worse, only at the first reconnection."""
    for chunk in url.split(";"):
        for name, _ in urllib.parse.parse_qsl(
            urllib.parse.urlsplit(chunk.strip()).query, keep_blank_values=True
        ):
            if name not in TLS_OPTIONS:
                raise ConnectionConfigError(
                    f"the broker URL's query parameter {name!r} is not one the farm applies: only "
                    f"{', '.join(TLS_OPTIONS)}"
                    + (f" and {MASTER_NAME} (Sentinel)" if is_sentinel(url) else "")
                )


def check(url: str | None) -> None:
    """Refuse, with the reason, a URL no client can connect with (at start, not at first use)."""
    if url is None:
        return
    scheme = url.split("://", 1)[0]
    if is_sentinel(url):
        sentinel_parts(url)
        _check_query(url)
    elif scheme in ("redis", "rediss"):
        _check_query(url)
        parsed = urllib.parse.urlsplit(url)
        try:
            parsed.port  # noqa: B018 - parsing it is the check
        except ValueError as error:
            raise ConnectionConfigError(f"not a Redis URL: {url!r} ({error})") from None
        database = parsed.path.strip("/")
        if database and not database.isdigit():
            raise ConnectionConfigError(
                f"not a Redis URL: {url!r} (the database {database!r} is not a number)"
            )
    elif "+" not in scheme and scheme not in ("unix", "memory"):
        raise ConnectionConfigError(
            f"not a broker URL: {url!r} (expected redis://, rediss://, or sentinel://HOST:PORT;sentinel://...)"
        )


def check_master(url: str | None, master_name: str | None) -> None:
    """A Sentinel URL without the master's name reaches nothing: refuse it, saying what to set."""
    if url is not None and is_sentinel(url) and not master_name:
        raise ConnectionConfigError(
            "a Sentinel broker URL needs the master's name: set EVALFARM_REDIS_MASTER (redis_master), "
            "or end the URL with ?master_name=NAME"
        )
