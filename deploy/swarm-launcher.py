"""The `worker-launcher` service of the swarm stack (deploy/stack.yml): runs this node's worker container.

`docker stack deploy` drops `security_opt` (moby/moby#41371), and a worker without its seccomp
profile and an unmasked /proc cannot make the sandbox's namespaces. So the stack's `worker-launcher` service
is this launcher, one per labelled node (`mode: global`), and the launcher asks the node's Docker
engine, through its socket, for the worker container the compose file would start: the same image,
the same security options (WORKER_HOST_CONFIG mirrors docker-compose.yml's `worker` service, and
tests/test_deploy.py checks that they agree), on the stack's network under the alias `worker`.

The launcher lives as long as its worker: it forwards the worker's log, exits with its exit code
(swarm then starts a new launcher, and with it a new worker), and on SIGTERM (`docker stack rm`, a
node drained) stops the worker with Celery's warm shutdown and the compose file's grace period. A
launcher killed outright leaves its worker running; the next launcher on the node adopts it. The
worker's own stop timeout is that grace too, so a stop that does not come through the launcher (the
engine shutting down, an operator's `docker stop`) gives it the same time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

# The launcher's own variables once had the farm's prefix, and so reached the worker too; a stack that
# still sets the old names is refused rather than run with the defaults.
RENAMED = {
    "EVALFARM_DOCKER_SOCKET": "LAUNCHER_DOCKER_SOCKET",
    "EVALFARM_SECCOMP_PROFILE": "LAUNCHER_SECCOMP_PROFILE",
    "EVALFARM_WORKER_MEMORY_LIMIT": "WORKER_MEMORY_LIMIT",
}
SOCKET = os.environ.get("LAUNCHER_DOCKER_SOCKET", "unix:///var/run/docker.sock")
SECCOMP_PROFILE = Path(os.environ.get("LAUNCHER_SECCOMP_PROFILE", "/opt/evalfarm/share/seccomp.json"))
# Seconds the worker gets to finish its running chunks (the compose file's stop_grace_period).
STOP_GRACE_S = 1000
# What the compose file's `worker` service sets, in the engine's own terms (HostConfig).
WORKER_HOST_CONFIG: dict[str, Any] = {
    # systempaths=unconfined: no masked or read-only parts of /proc, so the sandbox can mount its own.
    "MaskedPaths": [],
    "ReadonlyPaths": [],
    "CapDrop": ["ALL"],
    "ReadonlyRootfs": True,
    "Tmpfs": {"/tmp": "size=256m"},
    "PidsLimit": 1024,
    "Init": True,
}
# The image's entry point takes a seat (core pinning), then runs this.
WORKER_COMMAND = ["evalfarm", "worker"]
# A container's id, as the engine's paths in /proc/self/mountinfo show it (its /etc/hostname).
CONTAINER_ID = re.compile(r"/containers/([0-9a-f]{64})/")


def renamed_variables(environ: dict[str, str]) -> list[str]:
    """What to say of each old name of a launcher variable that `environ` still sets."""
    return [f"{old} is no longer read: set {new}" for old, new in RENAMED.items() if old in environ]


def worker_name(node_id: str, stack: str) -> str:
    """The one worker container of this stack on this node (a name the engine keeps unique)."""
    return f"{stack}-worker-{node_id[:12]}"


def worker_environment(environ: dict[str, str]) -> list[str]:
    """The worker's environment: the farm's settings (EVALFARM_*), which the stack gives the
    launcher for its worker; the launcher's own variables are not among them."""
    return [f"{key}={value}" for key, value in sorted(environ.items()) if key.startswith("EVALFARM_")]


def host_config(seccomp_profile: str, stack: str, memory_bytes: int) -> dict[str, Any]:
    """The worker container's HostConfig: the compose file's security options and limits, and
    the node's volumes for its seats (core pinning) and datasets."""
    return {
        **WORKER_HOST_CONFIG,
        "SecurityOpt": [f"seccomp={seccomp_profile}", "no-new-privileges:true"],
        "Memory": memory_bytes,
        "Mounts": [
            {"Type": "volume", "Source": f"{stack}_worker-seats", "Target": "/var/lib/evalfarm/seats"},
            {
                "Type": "volume",
                "Source": f"{stack}_datasets",
                "Target": "/var/lib/evalfarm/datasets",
                "ReadOnly": True,
            },
        ],
        "RestartPolicy": {"Name": "no"},  # the launcher's restart is swarm's business
    }


def container_spec(image: str, name: str, stack: str, network: str, environ: dict[str, str],
                   seccomp_profile: str) -> dict[str, Any]:  # fmt: skip
    """The arguments of the engine's create-container call for this node's worker."""
    return {
        "image": image,
        "command": WORKER_COMMAND,
        "name": name,
        "hostname": name,
        "environment": worker_environment(environ),
        "labels": {"com.docker.stack.namespace": stack, "evalfarm.launched-by": "swarm-launcher"},
        "host_config": host_config(
            seccomp_profile, stack, memory_limit(environ.get("WORKER_MEMORY_LIMIT", "6g"))
        ),
        "networking_config": {"EndpointsConfig": {network: {"Aliases": ["worker"]}}},
        "stop_signal": "SIGTERM",
        "stop_timeout": STOP_GRACE_S,
    }


def memory_limit(text: str) -> int:
    """Docker's memory notation (`6g`, `512m`, bytes) in bytes."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().removesuffix("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def own_container_id() -> str:
    """This container's id: from the engine's paths in mountinfo, else the hostname (a swarm task's
    hostname is its container's short id unless the service sets one)."""
    try:
        found = CONTAINER_ID.search(Path("/proc/self/mountinfo").read_text())
    except OSError:
        found = None
    return found.group(1) if found else socket.gethostname()


class Launcher:
    """One worker container, kept in step with this launcher's life."""

    def __init__(self, api: Any, stopping: threading.Event) -> None:
        self.api = api
        self.stopping = stopping
        me = api.inspect_container(own_container_id())
        labels = me["Config"]["Labels"]
        self.stack = labels["com.docker.stack.namespace"]
        self.node = labels["com.docker.swarm.node.id"]
        self.image = me["Config"]["Image"]
        self.network = next(
            name for name in me["NetworkSettings"]["Networks"] if name.startswith(f"{self.stack}_")
        )
        self.name = worker_name(self.node, self.stack)
        self.adopted = False

    def start(self) -> str:
        """The worker's container id: a running one left by an earlier launcher, or a new one."""
        from docker.errors import NotFound

        try:
            found = self.api.inspect_container(self.name)
        except NotFound:
            found = None
        if found and found["State"]["Running"] and found["Config"]["Image"] == self.image:
            log(f"adopting the running worker {self.name}")
            self.adopted = True
            return str(found["Id"])
        if found:
            self.api.remove_container(self.name, force=True)
        profile = json.dumps(json.loads(SECCOMP_PROFILE.read_text()), separators=(",", ":"))
        spec = container_spec(self.image, self.name, self.stack, self.network, dict(os.environ), profile)
        created = self.api.create_container(**spec)
        self.api.start(created["Id"])
        log(f"started the worker {self.name} on {self.network}")
        return str(created["Id"])

    def run(self) -> int:
        """Run the worker until it exits or this launcher is told to stop; the worker's exit code."""
        from docker.errors import NotFound

        container = self.start()
        threading.Thread(target=self._forward_logs, args=(container,), daemon=True).start()
        result: dict[str, int] = {}
        waiter = threading.Thread(target=lambda: result.update(code=self._wait(container)), daemon=True)
        waiter.start()
        while waiter.is_alive() and not self.stopping.wait(1.0):
            pass
        if self.stopping.is_set() and waiter.is_alive():
            log(f"stopping the worker (up to {STOP_GRACE_S} s for its running chunks)")
            try:
                self.api.stop(container, timeout=STOP_GRACE_S)
            except NotFound:  # removed meanwhile (by an operator): nothing left to stop
                pass
            waiter.join()
        code = result.get("code", 1)
        try:
            self.api.remove_container(container, force=True)
        except NotFound:
            pass
        log(f"the worker exited with code {code}")
        return code

    def _wait(self, container: str) -> int:
        """The worker's exit code, once it has exited. A broken wait (the engine restarting, its
        socket closed) is not an exit: the container is asked again, and waited on while it runs."""
        from docker.errors import NotFound

        while True:
            try:
                return int(self.api.wait(container, timeout=None)["StatusCode"])
            except NotFound:
                return 1
            except Exception as error:  # the wait broke, not the worker: look again
                log(f"waiting on the worker failed ({error}); looking again")
                self.stopping.wait(2.0)
                try:
                    state = self.api.inspect_container(container)["State"]
                except NotFound:
                    return 1
                except Exception:
                    continue
                if not state["Running"]:
                    return int(state["ExitCode"])

    def _forward_logs(self, container: str) -> None:
        # An adopted worker's earlier log went out through the launcher that started it.
        for chunk in self.api.logs(container, stream=True, follow=True, tail=0 if self.adopted else "all"):
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()


def log(message: str) -> None:
    print(f"evalfarm-swarm-launcher: {message}", file=sys.stderr, flush=True)


def main() -> int:
    # First of all: as PID 1, this process ignores SIGTERM until it has a handler, and a stop that
    # came before it would be a SIGKILL 1030 s later, with the worker left behind.
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    for message in renamed_variables(dict(os.environ)):
        print(f"worker-launcher: {message}", file=sys.stderr)
        return 2
    import docker

    api = docker.APIClient(base_url=SOCKET, timeout=STOP_GRACE_S + 60)
    return Launcher(api, stopping).run()


if __name__ == "__main__":
    sys.exit(main())
