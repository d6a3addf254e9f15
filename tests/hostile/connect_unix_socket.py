# expect: ok
# check: no_unix_connection
import socket
path = open("/dev/stdin").read().strip()
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.send(b"leak")
    print("CONNECTED")
except OSError as error:
    print("blocked", error)
