# expect: runtime_error memory_limit timeout
# limits: {"wall_s": 3}
import threading, time
while True:
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
