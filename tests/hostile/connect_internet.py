# expect: ok
# check: all_blocked
import socket
try:
    socket.create_connection(("1.1.1.1", 443), timeout=2)
    print("CONNECTED")
except OSError as error:
    print("blocked", error)
