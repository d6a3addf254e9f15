# expect: timeout
# limits: {"wall_s": 1}
import threading, time
threading.Thread(target=time.sleep, args=(3600,)).start()
