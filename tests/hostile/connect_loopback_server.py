# expect: ok runtime_error
# check: no_loopback_connection
import os, socket
port = int(open("/dev/stdin").read())
for host in ("127.0.0.1", "localhost", "::1"):
    try:
        socket.create_connection((host, port), timeout=1).send(b"leak")
        print("CONNECTED", host)
    except OSError as error:
        print("blocked", host, error)
