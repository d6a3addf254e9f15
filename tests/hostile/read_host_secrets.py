# expect: ok
# check: project_hidden
import os
project_file = input()
for path in ("/etc/shadow", "/etc/passwd", "/root/.bash_history", "/var/log/syslog", project_file):
    try:
        with open(path) as f:
            f.read(1)
        print("READ", path)
    except OSError as error:
        print("blocked", path, type(error).__name__)
for path in ("/home", "/var", "/run", "/srv", "/mnt"):
    print("LISTED" if os.path.isdir(path) and os.listdir(path) else "blocked", path)
